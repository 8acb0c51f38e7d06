package main

import (
	"context"
	"fmt"
)

// deleted is the outcome of deleting one job or object, as --json prints it.
type deleted struct {
	Kind  string `json:"kind"` // job or object
	ID    string `json:"id"`
	Error string `json:"error,omitempty"`
}

func runDelete(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("delete", "OBJECT...  |  braid delete --job JOB...", e)
	var cf clientFlags
	cf.register(fs, e)
	jobs := fs.Bool("job", false, "delete the finished jobs named, not objects (cancel a running job first)")
	if err := parseArgs(fs, args, -1); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errUsage
	}
	return cf.run(ctx, e, defaultTimeout, func(ctx context.Context, s session) error {
		kind, resolve, del := "object", s.objectID, s.DeleteObject
		if *jobs {
			kind, resolve, del = "job", s.jobID, s.DeleteJob
		}
		var out []deleted
		failed := 0
		for _, arg := range fs.Args() {
			d := deleted{Kind: kind, ID: arg}
			id, err := resolve(ctx, arg)
			if err == nil {
				d.ID = id
				err = del(ctx, id)
			}
			if err != nil {
				d.Error, failed = err.Error(), failed+1
			}
			out = append(out, d)
			if !cf.json {
				printDeleted(e, d)
			}
		}
		if cf.json {
			if err := printJSON(e.stdout, out); err != nil {
				return err
			}
		}
		if failed > 0 {
			return fmt.Errorf("%d of %d not deleted", failed, len(out))
		}
		return nil
	})
}

// printDeleted prints what was deleted on stdout, and what was not on
// stderr.
func printDeleted(e *env, d deleted) {
	if d.Error != "" {
		fmt.Fprintf(e.stderr, "braid delete: %s %s: %s\n", d.Kind, d.ID, d.Error)
		return
	}
	fmt.Fprintf(e.stdout, "deleted %s %s\n", d.Kind, d.ID)
}
