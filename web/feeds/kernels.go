package feeds

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/watch"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// kernelHTML is the HTML body of a new kernel table's feed item;
// html/template escapes every op and model id.
var kernelHTML = template.Must(template.New("kernels").Parse(
	`<p><strong>{{.Row.Table}}</strong>: {{len .Row.Added}} operators added, {{len .Row.Dropped}} dropped since {{.Row.Previous}}.</p>` +
		`{{if .Row.Unblocks}}<p>Predicted to unblock {{len .Row.Unblocks}} models (every operator their predictions lacked is now implemented; a prediction, not a TPU result):</p>` +
		`<ul>{{range .Models}}<li><a href="{{.URL}}">{{.ID}}</a></li>{{end}}</ul>{{if .More}}<p>and {{.More}} more.</p>{{end}}{{end}}` +
		`<p><a href="{{.URL}}">The kernel tables</a></p>`))

// kernelFeedItems are the feed's items for new TorchTPU kernel tables: one
// per table read after another, with what it added and dropped and the
// models it is predicted to unblock (kind runtime, target tpu).
func (h *Handler) kernelFeedItems(ctx context.Context, base string) ([]Item, error) {
	rows, err := h.Data.KernelTables(ctx)
	if err != nil {
		return nil, err
	}
	page := base + "/runtimes#rt-kernels"
	var items []Item
	for _, row := range rows {
		if row.Previous == "" {
			continue
		}
		type model struct{ ID, URL string }
		view := struct {
			Row    data.KernelTable
			Models []model
			More   int
			URL    string
		}{Row: row, URL: page}
		title := fmt.Sprintf("New TorchTPU kernel table %s: %d operators added, %d dropped", row.Table, len(row.Added), len(row.Dropped))
		if n := len(row.Unblocks); n > 0 {
			title += fmt.Sprintf("; predicted to unblock %d models", n)
		}
		var text strings.Builder
		text.WriteString(title + ".")
		for i, id := range row.Unblocks {
			if i == Listed {
				view.More = len(row.Unblocks) - Listed
				fmt.Fprintf(&text, "\nand %d more.", view.More)
				break
			}
			view.Models = append(view.Models, model{ID: id, URL: base + show.ModelPath(id)})
			text.WriteString("\n" + id)
		}
		fmt.Fprintf(&text, "\n\n%s", page)
		var body bytes.Buffer
		if err := kernelHTML.Execute(&body, view); err != nil {
			return nil, err
		}
		at := row.ReadAt.UTC().Format(time.RFC3339)
		items = append(items, Item{
			ID: base + "/runtimes#kernels-" + url.QueryEscape(row.Table), URL: page, Title: title,
			ContentText: text.String(), ContentHTML: body.String(), DatePublished: at,
			Tags:  []string{"runtime", "kernels", string(compat.TargetTPU)},
			about: watch.Item{Target: compat.TargetTPU, Kind: watch.KindRuntime},
		})
	}
	return items, nil
}
