package endpoint

import (
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/flowsnap/flowsnap/endpoint/record"
	"github.com/flowsnap/flowsnap/plan"
)

// Media types of a GraphQL response (GraphQL over HTTP).
const (
	mediaJSON            = "application/json"
	mediaGraphQLResponse = "application/graphql-response+json"
)

// responseMedia is the media type a response to r is written in, chosen as
// gqlgen's transports choose it: the first of the two that Accept names,
// application/json for an absent Accept or a wildcard, and
// application/graphql-response+json when Accept names neither.
func responseMedia(r *http.Request) string {
	accept := r.Header.Get("Accept")
	if accept == "" {
		return mediaJSON
	}
	for part := range strings.SplitSeq(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "*/*", "application/*", mediaJSON:
			return mediaJSON
		case mediaGraphQLResponse:
			return mediaGraphQLResponse
		}
	}
	return mediaGraphQLResponse
}

// requestErrorWriter makes gqlgen's answers to request errors (a document
// that does not parse or validate, variables that do not coerce, a limit
// refused before execution) what GraphQL over HTTP asks for. gqlgen sets a
// status only on that path, so a status set is the sign of one:
//
//   - under application/json the status is 200, where gqlgen sends 422: a
//     client that asked for plain JSON may not read a body behind a 4xx,
//     and the spec asks for 200 (application/graphql-response+json keeps
//     its 400);
//   - the body has no data entry, where gqlgen writes "data": null: the
//     operation was never executed, which an absent entry says and a null
//     one does not.
//
// gqlgen writes such a body in one Write.
//
// It also sends the body a direct answer wrote in place of the stand-in
// gqlgen's transport writes for it (see answerBody).
type requestErrorWriter struct {
	http.ResponseWriter
	status int
	rec    *record.Record
}

func (w *requestErrorWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *requestErrorWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		if body := w.rec.TakeBody(); body != nil {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			_, err := w.ResponseWriter.Write(body)
			plan.GiveBuffer(body)
			if err != nil {
				return 0, err
			}
			return len(b), nil
		}
		return w.ResponseWriter.Write(b)
	}
	status := w.status
	w.status = 0
	if status == http.StatusUnprocessableEntity && w.Header().Get("Content-Type") == mediaJSON {
		status = http.StatusOK
	}
	body := withoutNullData(b)
	w.ResponseWriter.WriteHeader(status)
	if _, err := w.ResponseWriter.Write(body); err != nil {
		return 0, err
	}
	return len(b), nil
}

// finish sends a status set without a body.
func (w *requestErrorWriter) finish() {
	if w.status != 0 {
		w.ResponseWriter.WriteHeader(w.status)
		w.status = 0
	}
}

func (w *requestErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// withoutNullData drops a null data entry from a JSON response object,
// leaving anything else as it was.
func withoutNullData(b []byte) []byte {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || string(obj["data"]) != "null" {
		return b
	}
	delete(obj, "data")
	out, err := json.Marshal(obj)
	if err != nil {
		return b
	}
	return out
}

// writeRequestError answers a request error as requestErrorWriter makes
// gqlgen's answers: 400 under application/graphql-response+json, 200 under
// application/json, no data entry.
func writeRequestError(w http.ResponseWriter, r *http.Request, gqlErr *gqlerror.Error) {
	media, status := responseMedia(r), http.StatusOK
	if media == mediaGraphQLResponse {
		status = http.StatusBadRequest
	}
	w.Header().Set("Content-Type", media)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": gqlerror.List{gqlErr}})
}
