package contract

import (
	"regexp"
	"strings"
)

var (
	secretKeyRe = regexp.MustCompile(`(?i)(pass(word|wd)?|secret|token|api[-_]?key|apikey|auth|credential|session|cookie|private|signature|jwt|otp|pin$)`)
	jwtRe       = regexp.MustCompile(`^eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*$`)
	bearerRe    = regexp.MustCompile(`(?i)^(bearer|basic)\s+\S+`)
)

// Masked replaces a secret value in examples.
const Masked = "<masked>"

// maskExample returns a copy of v (decoded JSON) with secret-looking values replaced:
// values of fields whose names say secret, JWTs, and bearer or basic credentials.
func maskExample(v any, key string) any {
	if key != "" && secretKeyRe.MatchString(key) {
		switch v.(type) {
		case map[string]any, []any:
		default:
			if v != nil {
				return Masked
			}
		}
	}
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = maskExample(e, k)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = maskExample(e, key)
		}
		return out
	case string:
		if looksSecret(v) {
			return Masked
		}
	}
	return v
}

// looksSecret reports whether a string value is a credential whatever its field's name.
func looksSecret(v string) bool {
	return jwtRe.MatchString(v) || bearerRe.MatchString(v) || strings.HasPrefix(v, "sk-") && len(v) > 20
}
