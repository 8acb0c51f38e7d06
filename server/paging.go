package server

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/braidhq/braid/api"
)

// The list endpoints (GET /v1/workers, /v1/jobs, /v1/objects) and a job's
// units are paged: ?limit=N asks for at most N items (default and most
// per page: maxPage), ?after=CURSOR for those after the item whose cursor
// that is (a worker's name, a job's or an object's id, a unit's index) in
// the list's order. A page that is not the last says where the next one
// starts in a Link header, as GitHub's API does:
//
//	Link: </v1/workers?after=w0999&limit=1000>; rel="next"
//
// so that a client follows pages without knowing the cursors, and one
// that asks for no page gets the first maxPage items as before paging
// existed. With 10,000 workers an unpaged list took the dispatch loop
// and the encoder long enough to delay every other call.
const maxPage = 1000

// page is the part of a list a request asks for.
type page struct {
	after string // "" for the first page
	limit int
}

// readPage reads ?limit= and ?after=; limit defaults to max, and is 1 to
// max.
func readPage(r *http.Request, max int) (page, error) {
	q := r.URL.Query()
	p := page{after: q.Get("after"), limit: max}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > max {
			return p, badRequest(api.CodeBadParameter, "limit %q: want 1 to %d items a page", v, max)
		}
		p.limit = n
	}
	return p, nil
}

// setNext says in a Link header that the list goes on after cursor: the
// request's URL with after (and limit) set.
func setNext(w http.ResponseWriter, r *http.Request, p page, cursor string) {
	q := r.URL.Query()
	q.Set("after", cursor)
	q.Set("limit", strconv.Itoa(p.limit))
	u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	w.Header().Set("Link", "<"+u.String()+`>; rel="next"`)
}

// cut returns the page of items (sorted by key) that p asks for, and the
// cursor of the next page ("" if this is the last).
func cut[T any](items []T, key func(T) string, p page) ([]T, string) {
	lo := 0
	if p.after != "" {
		lo = searchAfter(len(items), func(i int) string { return key(items[i]) }, p.after)
	}
	hi := min(lo+p.limit, len(items))
	if hi < len(items) {
		return items[lo:hi], key(items[hi-1])
	}
	return items[lo:hi], ""
}

// searchAfter is the first index of n sorted keys whose key sorts after
// cursor.
func searchAfter(n int, key func(int) string, cursor string) int {
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if key(m) <= cursor {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
