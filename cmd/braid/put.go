package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/braidhq/braid/api"
)

// putSynopsis is put's usage line.
const putSynopsis = "FILE|DIR...  |  braid put -  (standard input)  |  braid put --from s3://BUCKET/KEY\n\n" +
	"Uploads each file, and each file of a directory (not its subdirectories', nor its hidden\n" +
	"files). One FILE prints its object id (the sha256 of its bytes) on stdout; several, or a\n" +
	"directory, print a line \"ID  NAME\" each (with --json, an object mapping each name to its\n" +
	"id). An object is at most the server's --max-object, 1 GiB by default. With --from the\n" +
	"server reads the object from the bucket itself (its own S3 endpoint and credentials);\n" +
	"nothing is downloaded here."

func runPut(ctx context.Context, args []string, e *env) error {
	fset := newFlagSet("put", putSynopsis, e)
	var cf clientFlags
	cf.register(fset, e)
	from := fset.String("from", "", "store the object at `s3://BUCKET/KEY`, read by the server, instead of a file")
	if err := parseArgs(fset, args, -1); err != nil {
		return err
	}
	switch {
	case *from != "" && fset.NArg() > 0:
		return usageErrorf("put --from takes no FILE: the server reads the object from the bucket")
	case *from != "":
		return putFrom(ctx, cf, *from, e)
	case fset.NArg() == 0:
		fset.Usage()
		return errUsage
	case fset.NArg() == 1 && !isDir(fset.Arg(0)):
		return putOne(ctx, cf, fset.Arg(0), e)
	}
	if slices.Contains(fset.Args(), "-") {
		return usageErrorf("put - reads standard input alone; give it no other FILE")
	}
	files, err := inputFiles(fset.Args())
	if err != nil {
		return err
	}
	return cf.run(ctx, e, defaultTimeout, func(ctx context.Context, s session) error {
		ids := map[string]string{}
		for _, f := range files {
			obj, err := s.PutFile(ctx, f.path)
			if err != nil {
				return fmt.Errorf("%s: %w", f.path, err)
			}
			ids[f.path] = obj.ID
			if !cf.json {
				if _, err := fmt.Fprintf(e.stdout, "%s  %s\n", obj.ID, f.path); err != nil {
					return err
				}
			}
		}
		if cf.json {
			return printJSON(e.stdout, ids)
		}
		return nil
	})
}

// putOne uploads one file, or standard input for "-", and prints its id,
// or with --json the object.
func putOne(ctx context.Context, cf clientFlags, name string, e *env) error {
	r, done, err := openInput(name, e)
	if err != nil {
		return err
	}
	defer done()
	return putObject(ctx, cf, e, func(ctx context.Context, s session) (api.Object, error) { return s.Put(ctx, r) })
}

// putFrom has the server store the object at from, s3://BUCKET/KEY.
func putFrom(ctx context.Context, cf clientFlags, from string, e *env) error {
	if !strings.HasPrefix(from, "s3://") {
		return usageErrorf("--from %q: want s3://BUCKET/KEY", from)
	}
	return putObject(ctx, cf, e, func(ctx context.Context, s session) (api.Object, error) { return s.Import(ctx, from) })
}

// putObject stores one object as put says and prints its id, or with
// --json the object.
func putObject(ctx context.Context, cf clientFlags, e *env, put func(context.Context, session) (api.Object, error)) error {
	return cf.run(ctx, e, defaultTimeout, func(ctx context.Context, s session) error {
		obj, err := put(ctx, s)
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
// "-".
func openInput(name string, e *env) (io.Reader, func(), error) {
	if name == "-" {
		return e.stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

// inputFile is a file to upload: its path, and the name a job gives its
// input (the file's name, if it may name one: api.ValidInputName).
type inputFile struct {
	path, name string
}

// inputFiles lists the files that args name, in order: each FILE, and
// each DIR's regular files sorted by name, leaving out subdirectories and
// hidden files. It checks every one is a readable regular file before
// anything is uploaded, and refuses a directory without files.
func inputFiles(args []string) ([]inputFile, error) {
	var out []inputFile
	for _, arg := range args {
		fi, err := os.Stat(arg)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			if err := readable(arg, fi); err != nil {
				return nil, err
			}
			out = append(out, fileOf(arg))
			continue
		}
		files, err := dirFiles(arg)
		if err != nil {
			return nil, err
		}
		out = append(out, files...)
	}
	return out, nil
}

// dirFiles lists dir's regular files, not hidden ones, sorted by name.
func dirFiles(dir string) ([]inputFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []inputFile
	for _, de := range entries {
		if strings.HasPrefix(de.Name(), ".") {
			continue
		}
		path := filepath.Join(dir, de.Name())
		fi, err := os.Stat(path) // follows a link to a file
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if err := readable(path, fi); err != nil {
			return nil, err
		}
		out = append(out, fileOf(path))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no files to upload (subdirectories and hidden files are left out)", dir)
	}
	return out, nil
}

// fileOf is the inputFile at path.
func fileOf(path string) inputFile {
	name := filepath.Base(path)
	if !api.ValidInputName(name) {
		name = ""
	}
	return inputFile{path: path, name: name}
}

// readable checks that path, which fi describes, is a regular file this
// process can open.
func readable(path string, fi os.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return f.Close()
}

// isDir reports whether path is a directory.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
