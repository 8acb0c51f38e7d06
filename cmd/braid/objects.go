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
	"strings"
	"unicode/utf8"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/store"
)

func runGet(ctx context.Context, args []string, e *env) error {
	fset := newFlagSet("get", "ID [-o FILE|DIR]  |  braid get --job JOB [-o FILE|DIR]", e)
	var cf clientFlags
	cf.register(fset, e)
	out := fset.String("o", "", "write to `FILE` instead of standard output, or into a directory, named after the id; a job of many\n"+
		"inputs writes each unit's output into the directory, named after its input, and the manifest beside them")
	job := fset.String("job", "", "download the result of the `JOB` instead of an object given by id")
	if err := parseArgs(fset, args, 1); err != nil {
		return err
	}
	if (fset.NArg() == 1) == (*job != "") {
		fset.Usage()
		return errUsage
	}
	return cf.run(ctx, e, defaultTimeout, func(ctx context.Context, s session) error {
		id, j, err := s.getID(ctx, fset.Arg(0), *job)
		if err != nil {
			return err
		}
		if strings.HasSuffix(*out, string(filepath.Separator)) { // -o DIR/: a directory, made if missing
			if err := os.MkdirAll(*out, 0o755); err != nil {
				return fmt.Errorf("get: %w", err)
			}
		}
		switch {
		case *out == "":
			return s.Get(ctx, id, stdoutFor(e))
		case j != nil && manyInputs(j.Spec) && isDir(*out):
			return getOutputs(ctx, s, *j, *out, e.stdout)
		}
		path, err := getToFile(ctx, s, id, *out)
		if err == nil && path != *out {
			fmt.Fprintln(e.stdout, path)
		}
		return err
	})
}

// getID is the id of the object get downloads: arg, or the result of job
// if one was named, with the job; either may be a unique prefix. An id
// the server gave is checked to be one, as it names a file.
func (s session) getID(ctx context.Context, arg, job string) (string, *api.Job, error) {
	if job == "" {
		id, err := s.objectID(ctx, arg)
		return id, nil, err
	}
	job, err := s.jobID(ctx, job)
	if err != nil {
		return "", nil, err
	}
	j, err := s.Job(ctx, job, false)
	if err != nil {
		return "", nil, err
	}
	switch {
	case j.Result != "" && !store.ValidID(j.Result):
		return "", nil, fmt.Errorf("job %s: the server gave %.80q as its result, which is not an object id", job, j.Result)
	case j.Result != "":
		return j.Result, &j, nil
	case j.State == api.JobFailed && j.Error != "":
		return "", nil, fmt.Errorf("job %s failed (%s); it has no result", j.ID, j.Error)
	case j.Terminal():
		return "", nil, fmt.Errorf("job %s was %s; it has no result", j.ID, j.State)
	default:
		return "", nil, fmt.Errorf("job %s is %s and has no result yet (braid wait %s)", j.ID, j.State, j.ID)
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
// returns the path written.
//
// A device or FIFO (/dev/null, /dev/stdout onto a pipe) is opened and
// written as it is. Otherwise get downloads into a temporary file beside
// the final one and renames that into place, so a failed download never
// leaves a partial file; if path is a symbolic link, the file it names is
// replaced and the link kept. Like os.Create it makes a new file 0666 less the
// umask and keeps an existing file's mode.
func getToFile(ctx context.Context, s session, id, path string) (string, error) {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return getIntoDir(ctx, s, id, path)
	case err == nil && !fi.Mode().IsRegular():
		return path, getToSpecial(ctx, s, id, path)
	case err == nil:
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return "", err
		}
		return path, replaceFile(ctx, s, id, target)
	}
	return path, replaceFile(ctx, s, id, path)
}

// getToSpecial writes object id into an existing file that is not a
// regular one: a device, FIFO or socket, which a rename would replace.
func getToSpecial(ctx context.Context, s session, id, path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	err = s.Get(ctx, id, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// replaceFile downloads object id into a temporary file beside path and
// renames it to path, keeping the mode of a file path names already.
func replaceFile(ctx context.Context, s session, id, path string) error {
	tmp, err := download(ctx, s, id, filepath.Dir(path))
	if err != nil {
		return err
	}
	return install(tmp, path)
}

// getIntoDir downloads object id into dir, named after the id with the
// extension its bytes call for, and returns the path written.
func getIntoDir(ctx context.Context, s session, id, dir string) (string, error) {
	tmp, err := download(ctx, s, id, dir)
	if err != nil {
		return "", err
	}
	path := withExtension(tmp, filepath.Join(dir, id))
	return path, install(tmp, path)
}

// download writes object id into a new temporary file in dir and syncs it;
// the file is open and removed again if anything fails.
func download(ctx context.Context, s session, id, dir string) (*os.File, error) {
	tmp, err := createTemp(dir)
	if err != nil {
		return nil, err
	}
	err = s.Get(ctx, id, tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	return tmp, nil
}

// install closes the downloaded file tmp and renames it to path, which
// keeps its mode if it exists; tmp is removed if anything fails.
func install(tmp *os.File, path string) error {
	var err error
	if fi, serr := os.Stat(path); serr == nil {
		err = tmp.Chmod(fi.Mode().Perm())
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
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
