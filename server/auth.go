package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/internal/fileutil"
	"github.com/braidhq/braid/server/statedb"
)

// Client authentication. With Config.Auth set, every endpoint but /healthz
// and the workers' own registry calls (which prove the cluster secret
// instead, workerAuth) needs a bearer token, and a token's role says what
// it may do (api.RoleRead, RoleSubmit, RoleAdmin). A token is
// "braid_" + id + "_" + secret: state.db keeps the id, the role and a
// SHA-256 of the secret, never the secret. Jobs and uploads record the id
// of the token that made them; a submit token sees and changes only its
// own jobs (others' are "not found", so ids do not leak), read and admin
// tokens see every job.
//
// A server with no admin token that may still be used makes one when it
// starts and writes it to DATA/admin.token (mode 0600): on a fresh server
// that is how the first admin gets in, and whoever can read the data
// directory could take over the server anyway.

// tokenRecord is a token as state.db keeps it (tokens bucket, JSON).
type tokenRecord struct {
	ID        string     `json:"id"`
	Name      string     `json:"name,omitempty"`
	Role      string     `json:"role"`
	Hash      string     `json:"hash"` // SHA-256 of the secret, hex
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

func (t *tokenRecord) expired(now time.Time) bool {
	return t.ExpiresAt != nil && !now.Before(*t.ExpiresAt)
}

func (t *tokenRecord) api() api.Token {
	return api.Token{ID: t.ID, Name: t.Name, Role: t.Role, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt}
}

const (
	tokenPrefix = "braid_"
	tokenIDLen  = 12 // hex digits
	maxNameLen  = 64
)

// roleRank orders the roles; an unknown role ranks 0.
func roleRank(role string) int {
	switch role {
	case api.RoleRead:
		return 1
	case api.RoleSubmit:
		return 2
	case api.RoleAdmin:
		return 3
	}
	return 0
}

// tokens is the server's token table: the tokens bucket, cached.
type tokens struct {
	db *statedb.DB
	mu sync.RWMutex // guards byID
	// byID holds every token on disk.
	byID map[string]tokenRecord
}

func loadTokens(db *statedb.DB) (*tokens, error) {
	t := &tokens{db: db, byID: map[string]tokenRecord{}}
	err := db.Tokens(func(id string, v []byte) error {
		var rec tokenRecord
		if err := json.Unmarshal(v, &rec); err != nil || rec.ID != id {
			return fmt.Errorf("token record %q is damaged: %v", id, err)
		}
		t.byID[rec.ID] = rec
		return nil
	})
	return t, err
}

// create makes a token and stores its record; the answer carries the
// secret, which is never seen again.
func (t *tokens) create(role, name string, ttl time.Duration, now time.Time) (api.Token, error) {
	rec, tok, err := mint(role, name, ttl, now)
	if err != nil {
		return api.Token{}, err
	}
	if err := t.store(rec); err != nil {
		return api.Token{}, err
	}
	out := rec.api()
	out.Token = tok
	return out, nil
}

// mint makes a token: its record and the token itself.
func mint(role, name string, ttl time.Duration, now time.Time) (tokenRecord, string, error) {
	var b [6 + 32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return tokenRecord{}, "", err
	}
	id, secret := hex.EncodeToString(b[:6]), hex.EncodeToString(b[6:])
	sum := sha256.Sum256([]byte(secret))
	rec := tokenRecord{ID: id, Name: name, Role: role, Hash: hex.EncodeToString(sum[:]), CreatedAt: now.UTC()}
	if ttl > 0 {
		exp := rec.CreatedAt.Add(ttl)
		rec.ExpiresAt = &exp
	}
	return rec, tokenPrefix + id + "_" + secret, nil
}

// store commits a token's record and lets it work.
func (t *tokens) store(rec tokenRecord) error {
	if err := t.db.Sync(statedb.PutToken(rec.ID, rec)); err != nil {
		return fmt.Errorf("saving the token: %w", err)
	}
	t.mu.Lock()
	t.byID[rec.ID] = rec
	t.mu.Unlock()
	return nil
}

// errLastAdmin refuses to revoke the last admin token that still works.
var errLastAdmin = errors.New("last admin token")

// revoke deletes token id's record. It refuses to remove the last admin
// token that has not expired: nobody could then make tokens until the
// server restarts and makes a new one.
func (t *tokens) revoke(id string, now time.Time) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec, ok := t.byID[id]
	if !ok {
		return false, nil
	}
	if rec.Role == api.RoleAdmin && !rec.expired(now) && t.adminsLocked(now) == 1 {
		return true, errLastAdmin
	}
	if err := t.db.Sync(statedb.DeleteToken(id)); err != nil {
		return true, fmt.Errorf("deleting the token: %w", err)
	}
	delete(t.byID, id)
	return true, nil
}

// adminsLocked counts admin tokens that have not expired; the caller holds
// t.mu.
func (t *tokens) adminsLocked(now time.Time) int {
	n := 0
	for _, rec := range t.byID {
		if rec.Role == api.RoleAdmin && !rec.expired(now) {
			n++
		}
	}
	return n
}

func (t *tokens) list() []api.Token {
	t.mu.RLock()
	out := make([]api.Token, 0, len(t.byID))
	for _, rec := range t.byID {
		out = append(out, rec.api())
	}
	t.mu.RUnlock()
	slices.SortFunc(out, func(a, b api.Token) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// check returns the record of the token s, or why it is refused.
func (t *tokens) check(s string, now time.Time) (tokenRecord, error) {
	rest, ok := strings.CutPrefix(s, tokenPrefix)
	id, secret, ok2 := strings.Cut(rest, "_")
	if !ok || !ok2 || len(id) != tokenIDLen {
		return tokenRecord{}, errors.New("that is not a braid token (they look like braid_<12 hex digits>_<secret>)")
	}
	t.mu.RLock()
	rec, found := t.byID[id]
	t.mu.RUnlock()
	sum := sha256.Sum256([]byte(secret))
	want, _ := hex.DecodeString(rec.Hash)
	if !found || subtle.ConstantTimeCompare(sum[:], want) != 1 {
		return tokenRecord{}, fmt.Errorf("token %s is not known here: it was revoked, or it belongs to another server", id)
	}
	if rec.expired(now) {
		return tokenRecord{}, fmt.Errorf("token %s expired at %s", id, rec.ExpiresAt.Format(time.RFC3339))
	}
	return rec, nil
}

// bootstrap makes an admin token if there is none that works, and writes
// it to dir/api.AdminTokenFile. It returns the file's path, "" if there
// was an admin token already. The file is on disk (synced) before the
// token is committed: a crash between the two leaves a file whose token
// does not work, and the next start makes another, never a working token
// whose secret nobody has.
func (t *tokens) bootstrap(dir string, now time.Time) (string, error) {
	t.mu.RLock()
	n := t.adminsLocked(now)
	t.mu.RUnlock()
	if n > 0 {
		return "", nil
	}
	rec, tok, err := mint(api.RoleAdmin, "first admin", 0, now)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, api.AdminTokenFile)
	if err := fileutil.WriteSynced(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("server: writing the first admin token: %w", err)
	}
	if err := t.store(rec); err != nil {
		os.Remove(path)
		return "", err
	}
	return path, nil
}

// caller is who made a request: the token's id and role. Without
// Config.Auth every caller is an anonymous admin.
type caller struct {
	id, role string
}

type callerKey struct{}

func callerOf(r *http.Request) caller {
	if c, ok := r.Context().Value(callerKey{}).(caller); ok {
		return c
	}
	return caller{role: api.RoleAdmin}
}

// sees reports whether c may see and change what the token owner made:
// admins and read tokens see everything (read tokens change nothing, by
// their routes' role), submit tokens their own.
func (c caller) sees(owner string) bool {
	return c.role != api.RoleSubmit || c.id == owner
}

// need admits requests whose token has at least role, and records the
// caller for the handler.
func (s *Server) need(role string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.tokens == nil {
			h(w, r)
			return
		}
		c, err := s.authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="braid"`)
			writeError(w, err)
			return
		}
		if roleRank(c.role) < roleRank(role) {
			writeError(w, &apiError{status: http.StatusForbidden, code: api.CodeForbidden,
				msg: fmt.Sprintf("this needs a token with role %s or above; token %s has role %s", role, c.id, c.role)})
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	}
}

// authenticate reads the bearer token of r.
func (s *Server) authenticate(r *http.Request) (caller, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return caller{}, &apiError{status: http.StatusUnauthorized, code: api.CodeUnauthorized,
			msg: "this server needs a token: pass --token, set $BRAID_TOKEN or put token = ... in ~/.config/braid/config " +
				"(an admin makes one with `braid token create`; a new server writes the first admin token to DATA/" + api.AdminTokenFile + ")"}
	}
	scheme, tok, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return caller{}, &apiError{status: http.StatusUnauthorized, code: api.CodeUnauthorized,
			msg: fmt.Sprintf("Authorization scheme %q: want Bearer", scheme)}
	}
	rec, err := s.tokens.check(strings.TrimSpace(tok), time.Now())
	if err != nil {
		return caller{}, &apiError{status: http.StatusUnauthorized, code: api.CodeUnauthorized, msg: err.Error()}
	}
	return caller{id: rec.ID, role: rec.Role}, nil
}

// workerOrAdmin admits the worker token (the cluster secret) or an admin
// bearer token: `braid workers rm` may come from either.
func (s *Server) workerOrAdmin(h http.HandlerFunc) http.HandlerFunc {
	worker, admin := s.workerAuth(h), s.need(api.RoleAdmin, h)
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(api.WorkerTokenHeader) != "" || s.tokens == nil {
			worker(w, r)
			return
		}
		admin(w, r)
	}
}

// noTokens answers the token calls of a server that checks none.
func (s *Server) noTokens(w http.ResponseWriter) bool {
	if s.tokens != nil {
		return false
	}
	writeError(w, conflict("this server checks no tokens (it runs with --auth=false): there are none to make, list or revoke"))
	return true
}

func (s *Server) handleCreateToken(w http.ResponseWriter, r *http.Request) {
	if s.noTokens(w) {
		return
	}
	var spec api.TokenSpec
	if err := readJSON(w, r, &spec); err != nil {
		writeError(w, err)
		return
	}
	if roleRank(spec.Role) == 0 {
		writeError(w, badRequest(api.CodeBadParameter, "role %q: want %s, %s or %s", spec.Role, api.RoleAdmin, api.RoleSubmit, api.RoleRead))
		return
	}
	if utf8.RuneCountInString(spec.Name) > maxNameLen || strings.ContainsFunc(spec.Name, unicode.IsControl) {
		writeError(w, badRequest(api.CodeBadParameter, "name: at most %d characters, no control characters", maxNameLen))
		return
	}
	var ttl time.Duration
	if spec.ExpiresIn != "" {
		d, err := ParseTTL(spec.ExpiresIn)
		if err != nil {
			writeError(w, badRequest(api.CodeBadParameter, "expires_in: %v", err))
			return
		}
		ttl = d
	}
	tok, err := s.tokens.create(spec.Role, spec.Name, ttl, time.Now())
	if err != nil {
		writeError(w, err)
		return
	}
	s.log.Info("token created", "token", tok.ID, "role", tok.Role, "name", tok.Name, "by", callerOf(r).id)
	writeJSON(w, http.StatusCreated, tok)
}

func (s *Server) handleListTokens(w http.ResponseWriter, _ *http.Request) {
	if s.noTokens(w) {
		return
	}
	writeJSON(w, 200, s.tokens.list())
}

func (s *Server) handleRevokeToken(w http.ResponseWriter, r *http.Request) {
	if s.noTokens(w) {
		return
	}
	id := r.PathValue("id")
	found, err := s.tokens.revoke(id, time.Now())
	switch {
	case !found:
		writeError(w, &apiError{status: 404, code: api.CodeNotFound, msg: fmt.Sprintf("no token %q (braid token list shows them)", id)})
	case errors.Is(err, errLastAdmin):
		writeError(w, conflict("token %s is the last admin token that works; make another admin token first", id))
	case err != nil:
		writeError(w, err)
	default:
		s.log.Info("token revoked", "token", id, "by", callerOf(r).id)
		w.WriteHeader(http.StatusNoContent)
	}
}

// ttlRE is a token lifetime's syntax, as the OpenAPI document states it:
// a whole number from 1 to 99999 and a unit.
var ttlRE = regexp.MustCompile(`^[1-9][0-9]{0,4}[smhd]$`)

// ttlUnits are the units of a token lifetime.
var ttlUnits = map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}

// ParseTTL reads a token lifetime: a whole number of seconds, minutes,
// hours or days from 1 to 99999 ("90m", "36h", "30d"; at most 99999d,
// about 273 years).
func ParseTTL(s string) (time.Duration, error) {
	if !ttlRE.MatchString(s) {
		return 0, fmt.Errorf("%.40q: want a whole number from 1 to 99999 and a unit, s, m, h or d, such as 36h or 30d", s)
	}
	n, _ := strconv.Atoi(s[:len(s)-1])
	return time.Duration(n) * ttlUnits[s[len(s)-1]], nil
}
