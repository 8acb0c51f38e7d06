package server

import (
	"fmt"
	"math"
	"sort"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/scheduler"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/wire"
)

// Limits every accepted job must fit downstream, checked at submit so that
// a unit the data plane cannot carry is a 400 naming the limit, never a
// unit that cannot be sent.
const (
	// maxParamKey and maxParamValue are the wire's length prefixes for a
	// parameter's name (str8) and value (str16).
	maxParamKey   = math.MaxUint8
	maxParamValue = math.MaxUint16
	// maxName bounds a job id or operation name (str8 on the wire).
	maxName = math.MaxUint8
	// MaxWindow bounds Config.Window: a stream never has more units in
	// flight than max(Window, scheduler.DefaultMaxWindow), and its send
	// queue must hold that many (streamQueueLen, which startStreams sizes
	// each queue with). On a short path two hide the round trip (a worker
	// stream runs one unit at a time); on a long one the window grows
	// while the worker waits for input, up to the scheduler's
	// DefaultMaxWindow, which is as many.
	MaxWindow = 32
	// queueSlack is room in each stream's send queue beyond the units the
	// scheduler may have in flight on it, which are all the queue ever
	// holds (wants wait in workerConn.wantQ): a margin, since a full queue
	// aborts the association.
	queueSlack = 8
)

// checkParams checks a spec's parameters against the wire's limits; extra
// is how many parameters the server adds (format=png on tiles).
func checkParams(params map[string]string, extra int) error {
	if n := len(params) + extra; n > wire.MaxParams {
		if extra > 0 {
			return badRequest(api.CodeBadParameter, "%d parameters: at most %d on a tiled job (a unit carries at most %d, and tiles add format)",
				len(params), wire.MaxParams-extra, wire.MaxParams)
		}
		return badRequest(api.CodeBadParameter, "%d parameters: at most %d", len(params), wire.MaxParams)
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys) // report the same offender every time
	for _, k := range keys {
		if len(k) > maxParamKey {
			return badRequest(api.CodeBadParameter, "parameter name %.40q...: %d bytes, at most %d", k, len(k), maxParamKey)
		}
		if v := params[k]; len(v) > maxParamValue {
			return badRequest(api.CodeBadParameter, "parameter %s: value of %d bytes, at most %d", k, len(v), maxParamValue)
		}
	}
	return nil
}

// unitHeaderLen is the encoded size of a unit of job id without its input
// (the largest index and attempt encode no longer than the smallest).
func unitHeaderLen(id, op string, params ops.Params) (int, error) {
	if len(id) > maxName || len(op) > maxName {
		return 0, badRequest(api.CodeBadRequest, "job id or operation name over %d bytes", maxName)
	}
	b, err := wire.AppendUnit(nil, &wire.Unit{Job: id, Op: op, Params: params})
	if err != nil {
		return 0, badRequest(api.CodeBadParameter, "a unit of this job cannot be encoded: %v", err)
	}
	return len(b), nil
}

// maxInputFor is the largest unit input that fits one transport message
// beside a header of headerLen bytes.
func maxInputFor(headerLen int) int64 {
	return transport.MaxMessageSize - int64(headerLen)
}

// checkUnitFits reports a unit whose header plus input would not fit one
// transport message.
func checkUnitFits(what string, headerLen, inputLen int) error {
	if total := int64(headerLen) + int64(inputLen); total > transport.MaxMessageSize {
		return badRequest(api.CodeTooLarge, "%s: %d bytes of input and %d of unit header (parameters) make a %d-byte unit; a data-plane message holds at most %d",
			what, inputLen, headerLen, total, transport.MaxMessageSize)
	}
	return nil
}

// validateWindow checks Config.Window (0 means the scheduler's default).
func validateWindow(w int) error {
	if w < 0 || w > MaxWindow {
		return fmt.Errorf("server: window %d: want 1 to %d units in flight per stream (0: the default, %d)",
			w, MaxWindow, scheduler.DefaultWindow)
	}
	return nil
}

// streamQueueLen is the capacity a stream's send queue needs: the most
// units the scheduler ever has in flight on one stream, and queueSlack.
// startStreams should size each queue with it, so that a full queue means
// a bug, not a big window.
func (s *Server) streamQueueLen() int {
	return max(s.cfg.Window, scheduler.DefaultWindow, scheduler.DefaultMaxWindow) + queueSlack
}
