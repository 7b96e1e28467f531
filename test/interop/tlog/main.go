// Command tlogcheck audits one chain of a running ledger as a C2SP transparency log with Go's own
// checksum-database libraries (golang.org/x/mod/sumdb/note and .../tlog), none of our code:
//
//   - the checkpoint must open with the served verifier key (note.Open) and name the chain's origin;
//   - the tree hash computed from the served tiles (tlog.TileHashReader, which checks every tile it
//     reads against the checkpoint) must equal the checkpoint's root;
//   - every entry of every entry bundle must be proven in the tree (ProveRecord / CheckRecord);
//   - with -old, the earlier checkpoint must open too and the tree must extend it (ProveTree / CheckTree);
//   - with -parallel, the tiles of each ReadTiles call are fetched at once, as x/mod's sumdb client does.
//
// It prints one JSON line of what it checked and exits 0, or prints why not and exits 1.
//
// Build (Debian golang-go and golang-golang-x-mod-dev): GO111MODULE=off GOPATH=/usr/share/gocode go build
package main

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

const height = 8

var client = &http.Client{Timeout: 30 * time.Second}

// The slowest single fetch (checkpoint, key and tiles), in milliseconds.
var slowest struct {
	sync.Mutex
	ms int64
}

func fetch(url, apiKey string) ([]byte, error) {
	started := time.Now()
	defer func() {
		took := time.Since(started).Milliseconds()
		slowest.Lock()
		if took > slowest.ms {
			slowest.ms = took
		}
		slowest.Unlock()
	}()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return nil, err
	}
	if apiKey != "" {
		req.Header.Set("X-API-Key", apiKey)
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", url, res.StatusCode, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// tiles reads x/mod's tiles from the C2SP paths: tile/8/L/N -> tile/L/N, tile/8/data/N -> tile/entries/N.
type tiles struct {
	prefix, apiKey string
	// parallel fetches the tiles of one ReadTiles call at once, as x/mod's own sumdb client does.
	parallel bool
	mu       sync.Mutex
	fetched  int
	// x/mod's reader asks again for tiles it has read; a monitor keeps what it fetched.
	cache map[string][]byte
}

func c2spPath(t tlog.Tile) string {
	p := strings.TrimPrefix(t.Path(), fmt.Sprintf("tile/%d/", height))
	if strings.HasPrefix(p, "data/") {
		return "tile/entries/" + strings.TrimPrefix(p, "data/")
	}
	return "tile/" + p
}

func (r *tiles) Height() int { return height }

func (r *tiles) ReadTiles(ts []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(ts))
	errs := make([]error, len(ts))
	var wg sync.WaitGroup
	for i, t := range ts {
		path := c2spPath(t)
		r.mu.Lock()
		data, ok := r.cache[path]
		r.mu.Unlock()
		if ok {
			out[i] = data
			continue
		}
		get := func(i int, path string) {
			data, err := fetch(r.prefix+"/"+path, r.apiKey)
			r.mu.Lock()
			defer r.mu.Unlock()
			if err != nil {
				errs[i] = err
				return
			}
			r.fetched++
			r.cache[path] = data
			out[i] = data
		}
		if r.parallel {
			wg.Add(1)
			go func(i int, path string) {
				defer wg.Done()
				get(i, path)
			}(i, path)
		} else {
			get(i, path)
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (r *tiles) SaveTiles([]tlog.Tile, [][]byte) {}

type checkpoint struct {
	origin string
	tree   tlog.Tree
}

func openCheckpoint(msg []byte, verifier note.Verifier) (checkpoint, error) {
	n, err := note.Open(msg, note.VerifierList(verifier))
	if err != nil {
		return checkpoint{}, fmt.Errorf("note.Open: %w", err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 || lines[len(lines)-1] != "" {
		return checkpoint{}, errors.New("the checkpoint text is not three lines")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 {
		return checkpoint{}, fmt.Errorf("bad tree size %q", lines[1])
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize {
		return checkpoint{}, fmt.Errorf("bad root hash %q", lines[2])
	}
	var h tlog.Hash
	copy(h[:], raw)
	return checkpoint{origin: lines[0], tree: tlog.Tree{N: size, Hash: h}}, nil
}

func run() (map[string]interface{}, error) {
	base := flag.String("url", "", "the ledger's base URL")
	chain := flag.String("chain", "", "the chain to audit")
	apiKey := flag.String("api-key", "", "a reader key, when auth is on")
	checkpointFile := flag.String("checkpoint", "", "check this checkpoint instead of the one served now")
	oldFile := flag.String("old", "", "an earlier checkpoint the tree must extend")
	parallel := flag.Bool("parallel", false, "fetch the tiles x/mod asks for in one call at once, as its sumdb client does")
	flag.Parse()
	if *base == "" || *chain == "" {
		return nil, errors.New("usage: tlogcheck -url URL -chain NAME [-api-key KEY] [-checkpoint FILE] [-old FILE]")
	}
	vkey, err := fetch(*base+"/tlog/vkey", *apiKey)
	if err != nil {
		return nil, err
	}
	verifier, err := note.NewVerifier(strings.TrimSpace(string(vkey)))
	if err != nil {
		return nil, fmt.Errorf("note.NewVerifier: %w", err)
	}
	prefix := *base + "/tlog/" + *chain
	var msg []byte
	if *checkpointFile != "" {
		msg, err = os.ReadFile(*checkpointFile)
	} else {
		msg, err = fetch(prefix+"/checkpoint", *apiKey)
	}
	if err != nil {
		return nil, err
	}
	cp, err := openCheckpoint(msg, verifier)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(cp.origin, "/"+*chain) || !strings.HasPrefix(cp.origin, verifier.Name()+"/") {
		return nil, fmt.Errorf("the checkpoint's origin %q is not %s/%s", cp.origin, verifier.Name(), *chain)
	}
	reader := &tiles{prefix: prefix, apiKey: *apiKey, parallel: *parallel, cache: map[string][]byte{}}
	hashes := tlog.TileHashReader(cp.tree, reader)
	root, err := tlog.TreeHash(cp.tree.N, hashes)
	if err != nil {
		return nil, fmt.Errorf("tlog.TreeHash: %w", err)
	}
	if root != cp.tree.Hash {
		return nil, fmt.Errorf("the tiles' tree hash %v is not the checkpoint's %v", root, cp.tree.Hash)
	}

	// Every entry, bundle by bundle, proven against the checkpoint.
	records := int64(0)
	for start := int64(0); start < cp.tree.N; start += 1 << height {
		width := cp.tree.N - start
		if width > 1<<height {
			width = 1 << height
		}
		bundle, err := reader.ReadTiles([]tlog.Tile{{H: height, L: -1, N: start >> height, W: int(width)}})
		if err != nil {
			return nil, err
		}
		data := bundle[0]
		for i := int64(0); i < width; i++ {
			if len(data) < 2 || len(data) < 2+int(binary.BigEndian.Uint16(data)) {
				return nil, fmt.Errorf("entry bundle %d ends early, at entry %d", start>>height, i)
			}
			size := int(binary.BigEndian.Uint16(data))
			entry := data[2 : 2+size]
			data = data[2+size:]
			n := start + i
			proof, err := tlog.ProveRecord(cp.tree.N, n, hashes)
			if err != nil {
				return nil, fmt.Errorf("tlog.ProveRecord(%d): %w", n, err)
			}
			if err := tlog.CheckRecord(proof, cp.tree.N, cp.tree.Hash, n, tlog.RecordHash(entry)); err != nil {
				return nil, fmt.Errorf("tlog.CheckRecord(%d): %w", n, err)
			}
			records++
		}
		if len(data) != 0 {
			return nil, fmt.Errorf("entry bundle %d holds more than %d entries", start>>height, width)
		}
	}

	result := map[string]interface{}{
		"origin": cp.origin, "tree_size": cp.tree.N, "root": cp.tree.Hash.String(),
		"records_proven": records, "key": verifier.Name(),
	}
	if *oldFile != "" {
		oldMsg, err := os.ReadFile(*oldFile)
		if err != nil {
			return nil, err
		}
		old, err := openCheckpoint(oldMsg, verifier)
		if err != nil {
			return nil, fmt.Errorf("the old checkpoint: %w", err)
		}
		if old.origin != cp.origin {
			return nil, fmt.Errorf("the old checkpoint is of %q, not %q", old.origin, cp.origin)
		}
		proof, err := tlog.ProveTree(cp.tree.N, old.tree.N, hashes)
		if err != nil {
			return nil, fmt.Errorf("tlog.ProveTree(%d, %d): %w", cp.tree.N, old.tree.N, err)
		}
		if err := tlog.CheckTree(proof, cp.tree.N, cp.tree.Hash, old.tree.N, old.tree.Hash); err != nil {
			return nil, fmt.Errorf("tlog.CheckTree(%d, %d): %w", cp.tree.N, old.tree.N, err)
		}
		result["consistent_with"] = old.tree.N
	}
	result["tiles_fetched"] = reader.fetched
	result["slowest_fetch_ms"] = slowest.ms
	return result, nil
}

func main() {
	result, err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tlogcheck:", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(result)
	fmt.Println(string(out))
}
