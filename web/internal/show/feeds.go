package show

import "github.com/google-pytorch/torchtpu-scanner/internal/watch"

// Link is a feed a page links in its head.
type Link struct {
	Name, Type, Title, Href string
}

// ModelFeeds are the feeds of one model's status changes.
func ModelFeeds(id string) []Link {
	q := "?" + watch.Filter{Models: []string{id}}.Query()
	return []Link{
		{Name: "Atom", Type: "application/atom+xml", Title: id + ": status changes (Atom)", Href: "/feed.atom" + q},
		{Name: "JSON Feed", Type: "application/feed+json", Title: id + ": status changes", Href: "/feed.json" + q},
	}
}
