package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

func runPut(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("put", "FILE", e)
	var cf clientFlags
	cf.register(fs, e)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errUsage
	}
	return cf.run(ctx, e, defaultTimeout, func(ctx context.Context, s session) error {
		obj, err := s.PutFile(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(e.stdout, obj)
		}
		_, err = fmt.Fprintln(e.stdout, obj.ID)
		return err
	})
}

func runGet(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("get", "ID [-o FILE]  |  braid get --job JOB [-o FILE]", e)
	var cf clientFlags
	cf.register(fs, e)
	out := fs.String("o", "", "write to FILE instead of standard output")
	job := fs.String("job", "", "download this job's result instead of an object given by id")
	if err := parse(fs, args); err != nil {
		return err
	}
	if (fs.NArg() == 1) == (*job != "") {
		fs.Usage()
		return errUsage
	}
	return cf.run(ctx, e, defaultTimeout, func(ctx context.Context, s session) error {
		id := fs.Arg(0)
		if *job != "" {
			j, err := s.Job(ctx, *job, false)
			if err != nil {
				return err
			}
			if j.Result == "" {
				return fmt.Errorf("job %s is %s and has no result yet", j.ID, j.State)
			}
			id = j.Result
		}
		if *out == "" {
			return s.Get(ctx, id, e.stdout)
		}
		return getToFile(ctx, s, id, *out)
	})
}

// getToFile downloads into a temporary file and renames it into place, so a
// failed download never leaves a partial FILE.
func getToFile(ctx context.Context, s session, id, path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".braid-get-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := s.Get(ctx, id, tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
