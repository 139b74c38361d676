package termsafe

import (
	"context"
	"fmt"
	"log/slog"
)

// Handler wraps h so that every record's message, attribute keys, string
// values, errors and Stringers (in groups too) pass through Line before h
// sees them: a log line can neither act on the terminal it is shown on nor
// pretend to be two lines.
func Handler(h slog.Handler) slog.Handler { return handler{h} }

type handler struct{ next slog.Handler }

func (h handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Line(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h handler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = attr(a)
	}
	return handler{h.next.WithAttrs(clean)}
}

func (h handler) WithGroup(name string) slog.Handler { return handler{h.next.WithGroup(Line(name))} }

// attr is a with its key and value made safe.
func attr(a slog.Attr) slog.Attr {
	a.Value = a.Value.Resolve()
	a.Key = Line(a.Key)
	switch a.Value.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(Line(a.Value.String()))
	case slog.KindGroup:
		g := a.Value.Group()
		clean := make([]slog.Attr, len(g))
		for i, x := range g {
			clean[i] = attr(x)
		}
		a.Value = slog.GroupValue(clean...)
	case slog.KindAny:
		switch v := a.Value.Any().(type) {
		case error:
			a.Value = slog.StringValue(Line(v.Error()))
		case fmt.Stringer:
			a.Value = slog.StringValue(Line(v.String()))
		case []byte:
			a.Value = slog.StringValue(Line(string(v)))
		}
	}
	return a
}
