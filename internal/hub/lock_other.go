//go:build !unix

package hub

import (
	"context"
	"sync"
)

var locks sync.Map // path → *sync.Mutex

// lockFile serialises writers of one blob within this process only; other
// systems have no flock shared with Python here.
func lockFile(ctx context.Context, path string) (func(), error) {
	v, _ := locks.LoadOrStore(path, &sync.Mutex{})
	mu := v.(*sync.Mutex)
	mu.Lock()
	if err := ctx.Err(); err != nil {
		mu.Unlock()
		return nil, err
	}
	return mu.Unlock, nil
}
