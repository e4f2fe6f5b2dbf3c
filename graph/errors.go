package graph

import (
	"context"
	"errors"
	"log/slog"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/flowsnap/flowsnap/endpoint/record"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/snapshot"
)

// elementResult returns snap, or reports err at the path of element i of
// the list being resolved and returns nil: a broken element nulls only
// itself, and the rest of the list stands.
func elementResult(ctx context.Context, i int, snap snapshot.Snapshot, err error) snapshot.Snapshot {
	if err == nil {
		return snap
	}
	path := append(ast.Path{}, graphql.GetPath(ctx)...)
	graphql.AddError(ctx, &gqlerror.Error{Path: append(path, ast.PathIndex(i)), Err: err, Message: err.Error()})
	return nil
}

// elementErrors returns the error of element i of a loader's get, whose
// err is nil or a graphql.BatchErrorList.
func elementErrors(err error) func(i int) error {
	var list graphql.BatchErrorList
	if !errors.As(err, &list) {
		return func(int) error { return err }
	}
	return func(i int) error { return list[i] }
}

// gqlgen's own codes, which the API reports with its codes.
const (
	gqlgenComplexity = "COMPLEXITY_LIMIT_EXCEEDED"
)

// Presenter is the one place errors become what a client sees: every error
// gets an extensions.code of the API, and a message free of SQL, paths and
// secrets. Causes go to the request's record (record.Reporter), to be
// logged, never shown.
func Presenter() graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		ge := graphql.DefaultErrorPresenter(ctx, err)
		if ge.Extensions == nil {
			ge.Extensions = map[string]any{}
		}
		var fe *fault.Error
		var gq *gqlerror.Error
		switch {
		case errors.As(err, &fe):
			inner := err
			if errors.As(err, &gq) && gq.Err != nil {
				inner = gq.Err // an element error: its path is in ge already
			}
			code := fault.CodeOf(inner)
			ge.Message = record.Clip(fault.MessageOf(inner))
			ge.Extensions["code"] = string(code)
			if fe.RunID != "" {
				ge.Extensions["runId"] = fe.RunID
			}
			for k, v := range fe.Details {
				ge.Extensions[k] = v
			}
			// The cause goes in the request's one (rate-limited) log line.
			rec := record.ReporterOf(ctx)
			rec.Refuse(record.ReasonOf(code), code, ge.Message)
			if fe.Err != nil {
				rec.SetCause(fe.Err.Error())
			}
			if code == fault.Internal {
				ge.Message = "internal error"
			}
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
			ge.Message = fault.MessageOf(err)
			ge.Extensions["code"] = string(fault.Timeout)
			record.ReporterOf(ctx).Refuse("timeout", fault.Timeout, ge.Message)
		case errors.As(err, &gq):
			// gqlgen's own: parse and validation errors, arguments and
			// scalars that do not fit, limits. Their messages are about the
			// request, safe to show.
			ge.Message = record.Clip(ge.Message)
			switch code, _ := gq.Extensions["code"].(string); code {
			case gqlgenComplexity, string(fault.ComplexityLimit):
				ge.Extensions["code"] = string(fault.ComplexityLimit)
				record.ReporterOf(ctx).Refuse("complexity", fault.ComplexityLimit, ge.Message)
			case string(fault.Timeout):
			default:
				reason := "input"
				switch code {
				case errcode.ParseFailed:
					reason = "parse"
				case errcode.ValidationFailed:
					reason = "validation"
				case "":
				default:
					ge.Extensions["reason"] = code
				}
				ge.Extensions["code"] = string(fault.BadUserInput)
				record.ReporterOf(ctx).Refuse(reason, fault.BadUserInput, ge.Message)
			}
		default:
			ge.Message = "internal error"
			ge.Extensions["code"] = string(fault.Internal)
			rec := record.ReporterOf(ctx)
			rec.Refuse("internal", fault.Internal, ge.Message)
			rec.SetCause(err.Error())
		}
		return ge
	}
}

// Recoverer turns a panic in a resolver into an internal error for that
// field, logged with its value.
func Recoverer(log *slog.Logger) graphql.RecoverFunc {
	return func(ctx context.Context, p any) error {
		log.LogAttrs(ctx, slog.LevelError, "resolver panic", slog.Any("panic", p))
		return fault.Errorf(fault.Internal, "internal error")
	}
}
