package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/store"
)

// Ids may be given in full or, like git's, as a unique prefix: an object
// id's first hex digits, a job id's with or without its "j-".

// maxNamed is how many candidates an ambiguous prefix names.
const maxNamed = 5

// objectID resolves an object id or a unique prefix of one. An argument
// that is neither is passed on for the server to refuse.
func (s session) objectID(ctx context.Context, arg string) (string, error) {
	if store.ValidID(arg) || !isHex(arg) {
		return arg, nil
	}
	objs, err := s.Objects(ctx)
	if err != nil {
		return "", err
	}
	ids := make([]string, len(objs))
	for i, o := range objs {
		ids[i] = o.ID
	}
	return unique("object", arg, arg, ids)
}

// jobID resolves a job id or a unique prefix of one.
func (s session) jobID(ctx context.Context, arg string) (string, error) {
	prefix := arg
	if !strings.HasPrefix(prefix, "j-") {
		prefix = "j-" + prefix
	}
	if !isHex(prefix[2:]) {
		return arg, nil
	}
	if len(prefix) == len("j-")+12 {
		return prefix, nil
	}
	jobs, err := s.Jobs(ctx)
	if err != nil {
		return "", err
	}
	return unique("job", arg, prefix, jobIDs(jobs))
}

func jobIDs(jobs []api.Job) []string {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}

// unique returns the one id of ids that starts with prefix; arg is the
// prefix as the user gave it.
func unique(kind, arg, prefix string, ids []string) (string, error) {
	var match []string
	for _, id := range ids {
		if strings.HasPrefix(id, prefix) {
			match = append(match, id)
		}
	}
	switch {
	case len(match) == 1:
		return match[0], nil
	case len(match) == 0:
		return "", fmt.Errorf("no %s matches prefix %s", kind, arg)
	case len(match) > maxNamed:
		return "", fmt.Errorf("prefix %s is ambiguous: %s and %d more %ss", arg,
			strings.Join(match[:maxNamed], ", "), len(match)-maxNamed, kind)
	}
	return "", fmt.Errorf("prefix %s is ambiguous: %s", arg, strings.Join(match, ", "))
}

// isHex reports whether s is a non-empty string of lowercase hex digits.
func isHex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
