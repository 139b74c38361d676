package data

import (
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// Site is what every audience's handler reads and links with: the data,
// the known issues, who the client is (and the site's base URL for it),
// the Hub. The server makes one; each handler embeds it.
type Site struct {
	Data    *Reader
	Known   *Known
	Clients *httpx.Clients
	Hub     show.Hub // the Hub's base URL: the answers' model links (their ETags say it)
}
