package server

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/braidhq/braid/api"
	bolt "go.etcd.io/bbolt"
)

// stateDB keeps job records in an embedded bbolt database so that a restarted
// server still answers for finished jobs and resumes unfinished ones.
// Writes go through one goroutine in submission order, off the dispatch loop.
type stateDB struct {
	db   *bolt.DB
	q    chan api.Job
	done chan struct{}
	log  func(job string, err error)
}

var jobsBucket = []byte("jobs")

func openState(path string) (*stateDB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("server: open state %s: %w (is another server using this --data dir?)", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(jobsBucket)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("server: init state: %w", err)
	}
	s := &stateDB{db: db, q: make(chan api.Job, 1024), done: make(chan struct{})}
	go s.writer()
	return s, nil
}

// saveJob queues a job record for writing. Records are written in the order
// they are queued, so a later state never loses to an earlier one; the send
// blocks while the writer is 1024 records behind.
func (s *stateDB) saveJob(j api.Job) {
	s.q <- j
}

// writer batches queued records into one transaction each round.
func (s *stateDB) writer() {
	defer close(s.done)
	for j := range s.q {
		batch := []api.Job{j}
	more:
		for len(batch) < 256 {
			select {
			case j, ok := <-s.q:
				if !ok {
					break more
				}
				batch = append(batch, j)
			default:
				break more
			}
		}
		if err := s.write(batch); err != nil && s.log != nil {
			s.log(batch[0].ID, err)
		}
	}
}

func (s *stateDB) write(batch []api.Job) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(jobsBucket)
		for _, j := range batch {
			v, err := json.Marshal(j)
			if err != nil {
				return err
			}
			if err := b.Put([]byte(j.ID), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// loadJobs returns every stored job record.
func (s *stateDB) loadJobs() ([]api.Job, error) {
	var out []api.Job
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(jobsBucket).ForEach(func(k, v []byte) error {
			var j api.Job
			if err := json.Unmarshal(v, &j); err != nil {
				return fmt.Errorf("job record %q: %w", k, err)
			}
			out = append(out, j)
			return nil
		})
	})
	return out, err
}

// close flushes queued writes and closes the database.
func (s *stateDB) close() {
	close(s.q)
	<-s.done
	s.db.Close()
}
