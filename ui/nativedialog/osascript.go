package nativedialog

import (
	"path/filepath"
	"strings"
)

// osascript shows AppleScript's choose file / choose file name / choose folder; a cancel is
// error -128 ("User canceled.") with exit status 1.
var osascript = tool{name: "osascript", args: osascriptArgs, cancelCode: 1,
	cancelled: func(stderr string) bool { return strings.Contains(stderr, "(-128)") }}

// osascriptArgs is the osascript command line for o: one -e with the whole script, which
// prints the POSIX path of the choice.
func osascriptArgs(o Options) []string {
	var b strings.Builder
	b.WriteString("POSIX path of (")
	switch {
	case o.Save:
		b.WriteString("choose file name")
	case o.Folder:
		b.WriteString("choose folder")
	default:
		b.WriteString("choose file")
	}
	if o.Title != "" {
		b.WriteString(" with prompt " + appleString(o.Title))
	}
	if o.Save && o.InitialName != "" {
		b.WriteString(" default name " + appleString(o.InitialName))
	}
	if o.InitialDir != "" {
		b.WriteString(" default location POSIX file " + appleString(o.InitialDir))
	}
	if !o.Save && !o.Folder {
		if exts := extensions(o.Filters); len(exts) > 0 {
			q := make([]string, len(exts))
			for i, e := range exts {
				q[i] = appleString(e)
			}
			b.WriteString(" of type {" + strings.Join(q, ", ") + "}")
		}
	}
	b.WriteString(")")
	return []string{"-e", b.String()}
}

// extensions are the filters' "*.ext" patterns as bare extensions (choose file takes
// extensions or type identifiers); none when a filter accepts everything.
func extensions(fs []Filter) []string {
	var out []string
	for _, f := range fs {
		for _, p := range f.Patterns {
			ext, ok := strings.CutPrefix(p, "*.")
			if !ok || ext == "*" || strings.ContainsAny(ext, "*?[") {
				return nil
			}
			out = append(out, ext)
		}
	}
	return out
}

// appleString quotes s as an AppleScript string literal.
func appleString(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `"`, `\"`)
	return `"` + s + `"`
}

// cleanDir is dir without a trailing separator (osascript prints folders with one).
func cleanDir(p string) string {
	if len(p) > 1 {
		return filepath.Clean(p)
	}
	return p
}
