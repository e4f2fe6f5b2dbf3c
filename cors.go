package main

import (
	"net/http"

	"github.com/rs/cors"

	"github.com/flowsnap/flowsnap/endpoint"
)

// withCORS lets pages on the given origins call next from a browser ("*":
// any origin). With no origins it adds nothing, and browsers keep
// cross-origin pages out as usual. Preflights (OPTIONS) are answered 204
// with the allowed origin, methods, headers and how long to cache them; a
// page may send If-None-Match and read the ETag, to revalidate a GET.
//
// A preflight from an origin not allowed goes on to next, which refuses it
// with a code and counts and logs it, as it does without origins.
//
// Browsers apply no CORS to WebSockets: the WebSocket handshake itself
// refuses an Origin other than the Host. An upgrade from an allowed origin
// is vouched for here, and reaches the handshake without its Origin.
func withCORS(next http.Handler, origins []string) http.Handler {
	if len(origins) == 0 {
		return next
	}
	c := cors.New(cors.Options{
		AllowedOrigins: origins,
		AllowedMethods: []string{http.MethodGet, http.MethodPost},
		// Authorization carries the bearer token when authentication is on.
		AllowedHeaders: []string{"Content-Type", "Accept", "If-None-Match", "Authorization", endpoint.MinRevisionHeader},
		ExposedHeaders: []string{"ETag", "WWW-Authenticate"},
		MaxAge:         600,
	})
	h := c.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" && !c.OriginAllowed(r) {
			next.ServeHTTP(w, r)
			return
		}
		if r.Header.Get("Upgrade") != "" && r.Header.Get("Origin") != "" && c.OriginAllowed(r) {
			r = r.Clone(r.Context())
			r.Header.Del("Origin")
		}
		h.ServeHTTP(w, r)
	})
}
