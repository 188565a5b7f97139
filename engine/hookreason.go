package engine

import (
	"net/http"
	"strconv"
	"strings"
)

// hookReason is the reason phrase to record for a response a hook produced or edited:
// the reason of resp.Status when that status line belongs to resp.StatusCode, otherwise
// the standard phrase of the code (a hook that changed only StatusCode must not keep the
// origin's "OK" next to a 418).
func hookReason(resp *http.Response) string {
	c := strconv.Itoa(resp.StatusCode)
	if resp.Status == c || strings.HasPrefix(resp.Status, c+" ") {
		return statusReason(resp.Status, resp.StatusCode)
	}
	return http.StatusText(resp.StatusCode)
}
