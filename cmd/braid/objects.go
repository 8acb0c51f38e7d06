package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/braidhq/braid/api"
)

// putSynopsis is put's usage line.
const putSynopsis = "FILE  |  braid put -  (standard input)\n\n" +
	"Prints the object's id (the sha256 of its bytes) on stdout. An object is at most the\n" +
	"server's --max-object, 1 GiB by default."

func runPut(ctx context.Context, args []string, e *env) error {
	fset := newFlagSet("put", putSynopsis, e)
	var cf clientFlags
	cf.register(fset, e)
	if err := parseArgs(fset, args, 1); err != nil {
		return err
	}
	if fset.NArg() != 1 {
		fset.Usage()
		return errUsage
	}
	r, done, err := openInput(fset.Arg(0), e)
	if err != nil {
		return err
	}
	defer done()
	return cf.run(ctx, e, defaultTimeout, func(ctx context.Context, s session) error {
		obj, err := s.Put(ctx, r)
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(e.stdout, obj)
		}
		if obj.Existing {
			fmt.Fprintf(e.stderr, "braid put: already stored (since %s)\n", obj.Created.Local().Format("2006-01-02 15:04:05"))
		}
		_, err = fmt.Fprintln(e.stdout, obj.ID)
		return err
	})
}

// openInput opens what put uploads: a regular file, or standard input for
// "-". It refuses a directory before any byte goes to the server.
func openInput(name string, e *env) (io.Reader, func(), error) {
	if name == "-" {
		return e.stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	if fi, err := f.Stat(); err != nil || fi.IsDir() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s is a directory; put uploads one file", name)
		}
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

func runGet(ctx context.Context, args []string, e *env) error {
	fset := newFlagSet("get", "ID [-o FILE|DIR]  |  braid get --job JOB [-o FILE|DIR]", e)
	var cf clientFlags
	cf.register(fset, e)
	out := fset.String("o", "", "write to `FILE` instead of standard output, or into a directory, named after the id")
	job := fset.String("job", "", "download the result of the `JOB` instead of an object given by id")
	if err := parseArgs(fset, args, 1); err != nil {
		return err
	}
	if (fset.NArg() == 1) == (*job != "") {
		fset.Usage()
		return errUsage
	}
	return cf.run(ctx, e, defaultTimeout, func(ctx context.Context, s session) error {
		id, err := s.getID(ctx, fset.Arg(0), *job)
		if err != nil {
			return err
		}
		if *out == "" {
			return s.Get(ctx, id, stdoutFor(e))
		}
		path, err := getToFile(ctx, s, id, *out)
		if err == nil && path != *out {
			fmt.Fprintln(e.stdout, path)
		}
		return err
	})
}

// getID is the id of the object get downloads: arg, or the result of job
// if one was named; either may be a unique prefix.
func (s session) getID(ctx context.Context, arg, job string) (string, error) {
	if job == "" {
		return s.objectID(ctx, arg)
	}
	job, err := s.jobID(ctx, job)
	if err != nil {
		return "", err
	}
	j, err := s.Job(ctx, job, false)
	if err != nil {
		return "", err
	}
	switch {
	case j.Result != "":
		return j.Result, nil
	case j.State == api.JobFailed && j.Error != "":
		return "", fmt.Errorf("job %s failed (%s); it has no result", j.ID, j.Error)
	case j.Terminal():
		return "", fmt.Errorf("job %s was %s; it has no result", j.ID, j.State)
	default:
		return "", fmt.Errorf("job %s is %s and has no result yet (braid wait %s)", j.ID, j.State, j.ID)
	}
}

// errBinaryTerminal refuses to write an image onto a terminal, as curl
// does.
var errBinaryTerminal = errors.New("the object is binary and standard output is a terminal: " +
	"give -o FILE, or redirect (braid get ID > FILE)")

// stdoutFor is where get writes without -o: standard output, guarded
// against binary data when it is a terminal.
func stdoutFor(e *env) io.Writer {
	if isTerminal(e.stdout) {
		return &textOnly{w: e.stdout}
	}
	return e.stdout
}

// textOnly passes text on to w and fails, before writing anything, if
// the first bytes are not text.
type textOnly struct {
	w       io.Writer
	checked bool
}

func (t *textOnly) Write(p []byte) (int, error) {
	if !t.checked {
		head := p[:min(len(p), 512)]
		if bytes.IndexByte(head, 0) >= 0 || !utf8.Valid(trimPartialRune(head)) {
			return 0, errBinaryTerminal
		}
		t.checked = true
	}
	return t.w.Write(p)
}

// trimPartialRune drops a UTF-8 sequence cut off at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// getToFile downloads object id into path, or into a file named after the
// id (with the extension its bytes call for) if path is a directory, and
// returns the path written. It downloads into a temporary file beside it
// and renames that into place, so a failed download never leaves a
// partial file. Like os.Create it makes a new file 0666 less the umask and
// keeps an existing file's mode.
func getToFile(ctx context.Context, s session, id, path string) (string, error) {
	fi, err := os.Stat(path)
	intoDir := err == nil && fi.IsDir()
	if intoDir {
		path = filepath.Join(path, id)
	}
	tmp, err := createTemp(filepath.Dir(path))
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	err = s.Get(ctx, id, tmp)
	if intoDir && err == nil {
		path = withExtension(tmp, path)
	}
	if fi, serr := os.Stat(path); err == nil && serr == nil {
		err = tmp.Chmod(fi.Mode().Perm())
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}

// createTemp creates a new file in dir with a random name, mode 0666 less
// the umask (os.CreateTemp's are 0600, whatever the umask).
func createTemp(dir string) (*os.File, error) {
	for {
		var b [8]byte
		_, _ = rand.Read(b[:])
		name := filepath.Join(dir, ".braid-get-"+hex.EncodeToString(b[:]))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
}

// withExtension adds to path the extension of the image or JSON that f
// holds.
func withExtension(f *os.File, path string) string {
	head := make([]byte, 512)
	n, _ := f.ReadAt(head, 0)
	ext := map[string]string{"image/png": ".png", "image/gif": ".gif", "image/jpeg": ".jpg"}[http.DetectContentType(head[:n])]
	if ext == "" && n > 0 && head[0] == '{' {
		ext = ".json"
	}
	return path + ext
}
