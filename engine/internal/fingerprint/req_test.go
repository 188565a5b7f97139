package fingerprint

import (
	"context"
	"net/http"
)

func httpRequest(ctx context.Context) (*http.Request, error) {
	return http.NewRequestWithContext(ctx, http.MethodGet, "https://a.test/", nil)
}
