// Command chaosworker is the remote worker the chaos suite (package e2e/chaos) starts,
// kills, stops and resumes. It runs jobs of kind "chaos" from a `hopper serve` through the Go
// remote worker (package remote) and appends one JSON line per event to its log file: a
// handler's start and outcome (job id, lease token, attempt, worker name, pid), a failed
// heartbeat, and every worker call about a job with the server's answer. Each line is one
// unbuffered write to a file opened with O_APPEND, so a SIGKILL loses nothing written.
//
// A job's args say what its handler does:
//
//	{"sleep_ms": 50}                      work 50 ms (the context ends it early), then succeed
//	{"sleep_ms": 50, "action": "fail"}    work, then return an error (retried with backoff)
//	{"action": "crash"}                   SIGKILL this process (a poison job)
//	{"action": "exit"}                    os.Exit(3) at once
//	{"sleep_ms": 3000, "heartbeat_ms": 200}  heartbeat every 200 ms while working
//	{"sleep_ms": 10, "fail_attempts": 1}  fail the first attempt, succeed on the retry
//	{"sleep_ms": 50, "fan_in": true}      work, then read the parents' results and complete with them
//
// A successful job's result is {"worker": NAME, "token": TOKEN} (chaos.Result); a fan-in job's
// adds "parents": each parent as hopper.ParentResults read it (id, step, outcome, result).
// With --fetch-parent-results the worker takes its jobs' parents' results with the jobs
// (remote.Config.FetchParentResults) instead of asking for them when a handler reads them.
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/e2e/chaos"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/remote"
	"google.golang.org/protobuf/proto"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "chaosworker:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		url, name, mode, logPath string
		concurrency              int
		lease, pollWait          time.Duration
	)
	flag.StringVar(&url, "url", "", "the server's base URL")
	flag.StringVar(&name, "name", "", "worker name (default chaos-PID)")
	flag.StringVar(&mode, "mode", "stream", "stream or poll")
	flag.StringVar(&logPath, "log", "", "the log file (appended to)")
	flag.IntVar(&concurrency, "concurrency", 10, "jobs at once")
	flag.DurationVar(&lease, "lease", 3*time.Second, "each job's lease")
	flag.DurationVar(&pollWait, "poll-wait", 2*time.Second, "how long one long poll waits")
	batch := flag.Int("batch", 0, "run the jobs of a group in batches of up to this many (a batch worker); 0: one by one")
	fetchParents := flag.Bool("fetch-parent-results", false, "take each job's parents' results with the job")
	flag.Parse()
	if url == "" || logPath == "" {
		return errors.New("--url and --log are required")
	}
	if name == "" {
		name = fmt.Sprintf("chaos-%d", os.Getpid())
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	lg := &logger{f: f, worker: name, pid: os.Getpid()}

	ws := hopper.NewWorkers()
	if *batch > 0 {
		hopper.AddBatchWorkerFunc(ws, hopper.BatchOpts{MaxJobs: *batch}, lg.workBatch)
	} else {
		hopper.AddWorkerFunc(ws, lg.work)
	}
	m := remote.Stream
	if mode == "poll" {
		m = remote.Poll
	}
	w, err := remote.New(remote.Config{
		URL: url, Workers: ws, Name: name, Mode: m, Concurrency: concurrency, LeaseDuration: lease,
		PollWait: pollWait, FetchParentResults: *fetchParents, HTTPClient: &http.Client{Transport: &rpcLog{next: http.DefaultTransport, log: lg}},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := w.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return w.Stop(stopCtx)
}

// logger appends Lines to the log file, one write each.
type logger struct {
	f      *os.File
	worker string
	pid    int
}

func (l *logger) write(line chaos.Line) {
	if line.T == 0 {
		line.T = time.Now().UnixNano()
	}
	line.Worker, line.PID = l.worker, l.pid
	b, _ := json.Marshal(line)
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		fmt.Fprintln(os.Stderr, "chaosworker: write log:", err)
	}
}

func (l *logger) work(ctx context.Context, job *hopper.Job[chaos.Args]) error {
	l.write(chaos.Line{Ev: "start", Job: job.ID, Token: job.Token, Attempt: job.Attempt})
	switch job.Args.Action {
	case "crash":
		l.write(chaos.Line{Ev: "crash", Job: job.ID, Token: job.Token})
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case "exit":
		l.write(chaos.Line{Ev: "crash", Job: job.ID, Token: job.Token})
		os.Exit(3)
	}
	err := l.sleep(ctx, job)
	if err == nil && (job.Args.Action == "fail" || job.Attempt <= job.Args.FailAttempts) {
		err = errors.New("the job's args asked it to fail")
	}
	result := chaos.Result{Worker: l.worker, Token: job.Token}
	if err == nil && job.Args.FanIn {
		result.Parents, err = readParents(ctx)
	}
	end := chaos.Line{Ev: "end", Job: job.ID, Token: job.Token, Outcome: "ok"}
	switch {
	case err == nil:
		err = hopper.SetResult(ctx, result)
	case ctx.Err() != nil:
		end.Outcome, end.Err = "canceled", context.Cause(ctx).Error()
	default:
		end.Outcome, end.Err = "fail", err.Error()
	}
	l.write(end)
	return err
}

// workBatch runs a batch: every job starts at once and works for the longest sleep_ms of the
// batch; a job asked to fail fails alone. Crashes and fan-ins are not batched.
func (l *logger) workBatch(ctx context.Context, b *hopper.Batch[chaos.Args]) error {
	longest := 0
	for _, job := range b.Jobs {
		l.write(chaos.Line{Ev: "start", Job: job.ID, Token: job.Token, Attempt: job.Attempt})
		longest = max(longest, job.Args.SleepMS)
	}
	done := time.NewTimer(time.Duration(longest) * time.Millisecond)
	defer done.Stop()
	var err error
	select {
	case <-ctx.Done():
		err = context.Cause(ctx)
	case <-done.C:
	}
	for i, job := range b.Jobs {
		end := chaos.Line{Ev: "end", Job: job.ID, Token: job.Token, Outcome: "ok"}
		switch {
		case err != nil:
			end.Outcome, end.Err = "canceled", err.Error()
		case job.Args.Action == "fail" || job.Attempt <= job.Args.FailAttempts:
			end.Outcome, end.Err = "fail", "the job's args asked it to fail"
			b.Fail(i, errors.New(end.Err))
		default:
			if serr := b.SetResult(i, chaos.Result{Worker: l.worker, Token: job.Token}); serr != nil {
				b.Fail(i, serr)
			}
		}
		l.write(end)
	}
	return err
}

// readParents reads the running job's parents' results, as a fan-in step does, in the order
// hopper.ParentResults gives them.
func readParents(ctx context.Context) ([]chaos.ParentSeen, error) {
	parents, err := hopper.ParentResults(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]chaos.ParentSeen, len(parents))
	for i, p := range parents {
		out[i] = chaos.ParentSeen{ID: p.ID, Step: p.Step, Outcome: string(p.Outcome), Result: p.Result, Expired: p.Expired}
	}
	return out, nil
}

// sleep works for the job's sleep_ms, heartbeating every heartbeat_ms, until ctx ends.
func (l *logger) sleep(ctx context.Context, job *hopper.Job[chaos.Args]) error {
	done := time.NewTimer(time.Duration(job.Args.SleepMS) * time.Millisecond)
	defer done.Stop()
	var beat <-chan time.Time
	if job.Args.HeartbeatMS > 0 {
		t := time.NewTicker(time.Duration(job.Args.HeartbeatMS) * time.Millisecond)
		defer t.Stop()
		beat = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-done.C:
			return nil
		case <-beat:
			if err := hopper.Heartbeat(ctx); err != nil {
				l.write(chaos.Line{Ev: "heartbeat", Job: job.ID, Token: job.Token, Err: err.Error()})
			}
		}
	}
}

// rpcLog is the worker's HTTP transport: it logs every WorkerService call about one job
// (Complete, Fail, ExtendLease…) with the answer's Connect code, "ok" on success.
type rpcLog struct {
	next http.RoundTripper
	log  *logger
}

// jobCalls are the WorkerService methods whose request starts with id = 1, lease_token = 2.
var jobCalls = map[string]bool{"Complete": true, "Fail": true, "Release": true, "Snooze": true,
	"Suspend": true, "ExtendLease": true, "Heartbeat": true, "ReportProgress": true}

func (r *rpcLog) RoundTrip(req *http.Request) (*http.Response, error) {
	proc := path.Base(req.URL.Path)
	if req.URL.Path == "/hopper.v1.WorkerService/Report" && req.Body != nil {
		return r.report(req)
	}
	if !strings.HasPrefix(req.URL.Path, "/hopper.v1.WorkerService/") || !jobCalls[proc] || req.Body == nil {
		return r.next.RoundTrip(req)
	}
	body, err := rereadable(req)
	if err != nil {
		return nil, err
	}
	var ref hopperv1.HeartbeatRequest // id and lease_token, the fields every job call starts with
	_ = proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(body, &ref)
	// T is when the call was sent: a worker stopped (SIGSTOP) while its call was out logs the
	// answer only once it runs again.
	line := chaos.Line{Ev: "rpc", T: time.Now().UnixNano(), Proc: proc, Job: ref.GetId(), Token: ref.GetLeaseToken(), Code: "ok"}
	resp, err := r.next.RoundTrip(req)
	switch {
	case err != nil:
		line.Code, line.Err = "transport", err.Error()
	case resp.StatusCode != http.StatusOK:
		line.Code, resp.Body = errorCode(resp)
	}
	r.log.write(line)
	return resp, err
}

// report logs each item of a Report (outcomes and lease renewals) as the single call it stands
// for, with its own verdict's code.
func (r *rpcLog) report(req *http.Request) (*http.Response, error) {
	body, err := rereadable(req)
	if err != nil {
		return nil, err
	}
	var in hopperv1.ReportRequest
	_ = proto.Unmarshal(body, &in)
	type item struct {
		proc string
		ref  interface {
			GetId() string
			GetLeaseToken() int64
		}
	}
	var items []item
	for _, o := range in.GetOutcomes() {
		switch x := o.GetOutcome().(type) {
		case *hopperv1.Outcome_Complete:
			items = append(items, item{"Complete", x.Complete})
		case *hopperv1.Outcome_Fail:
			items = append(items, item{"Fail", x.Fail})
		case *hopperv1.Outcome_Release:
			items = append(items, item{"Release", x.Release})
		case *hopperv1.Outcome_Snooze:
			items = append(items, item{"Snooze", x.Snooze})
		case *hopperv1.Outcome_Suspend:
			items = append(items, item{"Suspend", x.Suspend})
		}
	}
	for _, rn := range in.GetRenewals() {
		items = append(items, item{"ExtendLease", rn})
	}
	sent := time.Now().UnixNano()
	resp, err := r.next.RoundTrip(req)
	codes := make([]string, len(items))
	switch {
	case err != nil:
		for i := range codes {
			codes[i] = "transport"
		}
	case resp.StatusCode != http.StatusOK:
		var code string
		code, resp.Body = errorCode(resp)
		for i := range codes {
			codes[i] = code
		}
	default:
		raw, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		text := raw
		if resp.Header.Get("Content-Encoding") == "gzip" {
			if zr, zerr := gzip.NewReader(bytes.NewReader(raw)); zerr == nil {
				if b, berr := io.ReadAll(zr); berr == nil {
					text = b
				}
			}
		}
		var out hopperv1.ReportResponse
		if rerr != nil || proto.Unmarshal(text, &out) != nil {
			for i := range codes {
				codes[i] = "unreadable"
			}
			break
		}
		verdicts := append(out.GetOutcomes(), out.GetRenewals()...)
		for i := range codes {
			codes[i] = "missing"
			if i < len(verdicts) {
				codes[i] = verdicts[i].GetCode()
			}
		}
	}
	for i, it := range items {
		line := chaos.Line{Ev: "rpc", T: sent, Proc: it.proc, Job: it.ref.GetId(), Token: it.ref.GetLeaseToken(), Code: codes[i]}
		if err != nil {
			line.Err = err.Error()
		}
		r.log.write(line)
	}
	return resp, err
}

// rereadable reads req's body and leaves it in place to be sent.
func rereadable(req *http.Request) ([]byte, error) {
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return body, nil
}

// errorCode reads a Connect unary error's code from resp's JSON body and returns a body that
// still holds it.
func errorCode(resp *http.Response) (string, io.ReadCloser) {
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := raw
	if resp.Header.Get("Content-Encoding") == "gzip" {
		if zr, err := gzip.NewReader(bytes.NewReader(raw)); err == nil {
			if b, err := io.ReadAll(zr); err == nil {
				text = b
			}
		}
	}
	var e struct {
		Code string `json:"code"`
	}
	code := fmt.Sprintf("http %d", resp.StatusCode)
	if json.Unmarshal(text, &e) == nil && e.Code != "" {
		code = e.Code
	}
	return code, io.NopCloser(bytes.NewReader(raw))
}
