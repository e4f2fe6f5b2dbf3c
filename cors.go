package main

import (
	"net/http"

	"github.com/rs/cors"
)

// withCORS lets pages on the given origins call next from a browser ("*":
// any origin). With no origins it adds nothing, and browsers keep
// cross-origin pages out as usual. Preflights (OPTIONS) are answered 204
// with the allowed origin, methods, headers and how long to cache them.
func withCORS(next http.Handler, origins []string) http.Handler {
	if len(origins) == 0 {
		return next
	}
	return cors.New(cors.Options{
		AllowedOrigins: origins,
		AllowedMethods: []string{http.MethodGet, http.MethodPost},
		AllowedHeaders: []string{"Content-Type", "Accept", "Flowsnap-Min-Revision"},
		MaxAge:         600,
	}).Handler(next)
}
