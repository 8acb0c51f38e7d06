package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/ops/samples"
)

// Submit a job, wait for it, and fetch its result. The example runs its own
// server and worker on loopback; against a real cluster you would write
// c := client.New("http://server:7070") instead.
func Example() {
	ctx := context.Background()
	cl, err := cluster.Start(ctx, cluster.Config{Workers: []cluster.WorkerSpec{{Threads: 2}}})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	c := cl.Client

	obj, err := c.Put(ctx, bytes.NewReader(samples.GIF()))
	if err != nil {
		log.Fatal(err)
	}
	job, err := c.Submit(ctx, api.JobSpec{Op: "blur", Input: obj.ID, Params: map[string]string{"sigma": "2"}, Repeat: 8})
	if err != nil {
		log.Fatal(err)
	}
	job, err = c.Wait(ctx, job.ID, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.State, job.Progress.Done, "units")

	var m api.Manifest // a repeat job's result lists each unit's output
	b, err := c.GetBytes(ctx, job.Result)
	if err != nil {
		log.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		log.Fatal(err)
	}
	out, err := c.GetBytes(ctx, m.Units[0].Output)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(out[:6]))
	// Output:
	// done 8 units
	// GIF89a
}

// A client for a tool that a person watches: ride through a server restart
// for up to two minutes, and say so while waiting. Retry{For: -1} would
// turn retrying off.
func ExampleClient_WithRetry() {
	c := client.New("http://127.0.0.1:7070").WithRetry(client.Retry{
		For: 2 * time.Minute,
		Notify: func(err error, wait time.Duration) {
			log.Printf("server unreachable (%v); retrying in %v", err, wait)
		},
		Recovered: func() { log.Print("server is back") },
	})
	job, err := c.Wait(context.Background(), "j-0123456789ab", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.State)
}
