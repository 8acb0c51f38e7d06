package statedb

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// testUnit is a record whose every field depends on i, so that a record
// read back under the wrong index shows.
func testUnit(i int, try uint16) Unit {
	u := Unit{Sent: 1_700_000_000_000_000_000 + int64(i)*1000, Queued: int64(i % 7), Compute: int64(i%13) * 1000,
		Stream: uint16(i % 3), Attempts: try, State: UnitDone}
	u.Returned = u.Sent + 5000 + int64(i%11)
	u.Output[0], u.Output[1] = byte(i%5), 1 // five distinct outputs
	if i%97 == 0 {
		u.State, u.Output = UnitFailed, [32]byte{}
	}
	return u
}

// TestUnitLogRoundTrip: units written over many commits, in any order
// within each, some of them twice, read back by range and in whole as the
// last record of each, with their workers' names and failed units' errors.
func TestUnitLogRoundTrip(t *testing.T) {
	db, _ := openTest(t, t.TempDir())
	const n = 5000
	rng := rand.New(rand.NewPCG(1, 2))
	order := rng.Perm(n)
	worker := func(i int) string { return fmt.Sprintf("w%d", i%17) }
	put := func(i int, try uint16) Change {
		errText := ""
		if testUnit(i, try).State == UnitFailed {
			errText = fmt.Sprint("unit ", i, " failed")
		}
		return PutUnit("j-1", i, testUnit(i, try), worker(i), errText)
	}
	for len(order) > 0 {
		k := min(len(order), 1+rng.IntN(700))
		var cs []Change
		for _, i := range order[:k] {
			cs = append(cs, put(i, 1))
			if i%10 == 0 { // recorded again, later: the second record wins
				cs = append(cs, put(i, 2))
			}
		}
		if err := db.Sync(Batch(cs...)); err != nil {
			t.Fatal(err)
		}
		order = order[k:]
	}
	check := func(su StoredUnit) {
		t.Helper()
		try := uint16(1)
		if su.Index%10 == 0 {
			try = 2
		}
		want := testUnit(su.Index, try)
		if su.Rec != want || su.Worker != worker(su.Index) {
			t.Fatalf("unit %d: %+v on %q, want %+v on %q", su.Index, su.Rec, su.Worker, want, worker(su.Index))
		}
		if failed := want.State == UnitFailed; failed != (su.ErrText != "") {
			t.Fatalf("unit %d: error %q", su.Index, su.ErrText)
		}
	}
	got, err := db.UnitsRange("j-1", 1000, 3100)
	if err != nil || len(got) != 2100 || got[0].Index != 1000 || got[2099].Index != 3099 {
		t.Fatalf("range [1000, 3100): %d records (%v)", len(got), err)
	}
	for _, su := range got {
		check(su)
	}
	next := 0
	err = db.EachUnit("j-1", n+10, func(su StoredUnit) error {
		if su.Index != next {
			return fmt.Errorf("unit %d came after %d", su.Index, next-1)
		}
		next++
		check(su)
		return nil
	})
	if err != nil || next != n {
		t.Fatalf("EachUnit: %v after %d units", err, next)
	}
	stats, err := db.UnitStats("j-1", n-2, n+2)
	if err != nil || len(stats) != 4 || stats[1].State != "done" || stats[2].State != "pending" || stats[2].Index != n {
		t.Errorf("stats of the last units and two beyond: %+v %v", stats, err)
	}
}

// TestUnitLogCompact: a no-op job's unit records take a few bytes each on
// disk, where schema 2's took over 300.
func TestUnitLogCompact(t *testing.T) {
	db, _ := openTest(t, t.TempDir())
	const n = 100_000
	out := ParseID(strings.Repeat("ab", 32))
	sent := int64(1_700_000_000_000_000_000)
	for from := 0; from < n; from += 500 { // commits of 500 results, as at 50,000 units/s
		var cs []Change
		for i := from; i < from+500; i++ {
			sent += 20_000
			u := Unit{State: UnitDone, Attempts: 1, Stream: 0, Sent: sent, Returned: sent + 180_000, Compute: 900, Output: out}
			cs = append(cs, PutUnit("j-big", i, u, fmt.Sprintf("sim-%05d", i%10_000), ""))
		}
		db.Queue(Batch(cs...))
	}
	db.Flush()
	var bytes int
	err := db.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(unitLogBucket).ForEach(func(k, v []byte) error {
			bytes += len(k) + len(v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	perUnit := float64(bytes) / n
	t.Logf("%d units: %d bytes of keys and values, %.1f per unit", n, bytes, perUnit)
	if perUnit > 24 {
		t.Errorf("%.1f bytes per unit in the unit log; want at most 24", perUnit)
	}
}

// TestUnitLogBesideSchema2: a job with records in schema 2's units bucket
// (written before an upgrade) and in the unit log reads as one, and
// deleting it removes both; a delete in the same commit as new records
// leaves none behind.
func TestUnitLogBesideSchema2(t *testing.T) {
	db, _ := openTest(t, t.TempDir())
	err := db.db.Update(func(tx *bolt.Tx) error {
		for i := range 10 {
			if err := tx.Bucket(unitsBucket).Put(unitKey("j-up", i), encodeOld(testUnit(i, 1), "old")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var cs []Change
	for i := 10; i < 20; i++ {
		cs = append(cs, PutUnit("j-up", i, testUnit(i, 1), "new", ""))
	}
	if err := db.Sync(Batch(cs...)); err != nil {
		t.Fatal(err)
	}
	got, err := db.UnitsRange("j-up", 5, 15)
	if err != nil || len(got) != 10 || got[0].Worker != "old" || got[9].Worker != "new" || got[4].Index != 9 || got[5].Index != 10 {
		t.Fatalf("units 5 to 14 across the formats: %+v %v", got, err)
	}
	if err := db.Sync(Batch(PutUnit("j-up", 30, testUnit(30, 1), "new", ""), DeleteJob("j-up"))); err != nil {
		t.Fatal(err)
	}
	if got, err := db.UnitsRange("j-up", 0, math.MaxInt32); err != nil || len(got) != 0 {
		t.Errorf("after the delete: %d records (%v)", len(got), err)
	}
	// A new job of the same id numbers its workers afresh.
	if err := db.Sync(PutUnit("j-up", 0, testUnit(0, 1), "again", "")); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.UnitsRange("j-up", 0, 1); len(got) != 1 || got[0].Worker != "again" {
		t.Errorf("a job made again after its delete: %+v", got)
	}
}

// encodeOld is u as schema 2 recorded it.
func encodeOld(u Unit, worker string) []byte { return u.encode(nil, worker, "") }

// TestMigrateSchema2: a schema 2 database becomes schema 3 without a
// rewrite: its unit records stay readable, and no object is marked
// uploaded (that step is from schema 1).
func TestMigrateSchema2(t *testing.T) {
	dir := t.TempDir()
	db, closeDB := openTest(t, dir)
	err := db.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(unitsBucket).Put(unitKey("j-2", 4), encodeOld(testUnit(4, 1), "w")); err != nil {
			return err
		}
		return setSchema(tx, 2)
	})
	if err != nil {
		t.Fatal(err)
	}
	closeDB()
	db, _ = openTest(t, dir)
	if db.Schema() != 2 {
		t.Fatalf("schema %d, want 2", db.Schema())
	}
	obj := strings.Repeat("d", 64)
	if err := db.Migrate([]string{obj}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.Upload(obj); ok {
		t.Error("migrating from schema 2 marked an object uploaded")
	}
	if got, err := db.UnitsRange("j-2", 0, 10); err != nil || len(got) != 1 || got[0].Rec != testUnit(4, 1) {
		t.Errorf("schema 2's record after the migration: %+v %v", got, err)
	}
}

// FuzzDecodeChunk: any bytes as a chunk value decode or fail with an
// error, never panic, and a decoded record is in its chunk's range.
func FuzzDecodeChunk(f *testing.F) {
	us := []logUnit{{index: 1025, u: testUnit(1025, 1), worker: 3}, {index: 1030, u: testUnit(1030, 2)}}
	good := appendSegment(nil, 1, us)
	f.Add(good)
	f.Add(append(good, good...))
	f.Add(good[:len(good)-1])
	f.Add(binary.AppendUvarint(nil, 1<<40))
	f.Fuzz(func(t *testing.T, v []byte) {
		_ = decodeChunk(v, 1, func(i int, u Unit, _ uint32) {
			if i < chunkUnits || i >= 2*chunkUnits || u.State > UnitFailed {
				t.Fatalf("decoded unit %d state %d from chunk 1", i, u.State)
			}
		})
		_ = eachSegment(v, func(body []byte) error {
			_, _, err := segmentOutputs(body)
			return err
		})
	})
}
