package sqlitestore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// Two processes opening a new file at once both switch it to WAL; the
// loser's switch used to fail busy at once, without waiting on the busy
// timeout (about 1 open in 40 here). Both opens must succeed.
func TestConcurrentOpensOfANewFile(t *testing.T) {
	dir := t.TempDir()
	for i := range 100 {
		path := filepath.Join(dir, fmt.Sprintf("s%d.db", i))
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, 3)
		for j := range errs {
			wg.Go(func() {
				<-start
				st, err := Open(context.Background(), Options{Path: path})
				if err == nil {
					err = st.Close()
				}
				errs[j] = err
			})
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("open %d of a new file: %v", i, err)
			}
		}
	}
}
