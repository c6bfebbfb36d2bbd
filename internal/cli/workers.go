package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperclient"
	"github.com/spf13/cobra"
)

func newWorkersCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "Show the fleet: nodes, remote workers and open job streams",
		Args:  cobra.ArbitraryArgs,
		RunE:  groupRunE,
	}
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List nodes; with --server also remote workers and their job streams",
		Long: `ls lists the Hopper processes registered in the database (nodes: servers and Go
programs working jobs in process). Remote workers (any language, over the API) are known to
the server they talk to: with --server it lists them too, with their open job streams and
push counters.`,
		Args: cobra.NoArgs,
		RunE: runWorkersLs,
	}
	addJSONFlag(ls)
	cmd.AddCommand(ls)
	return cmd
}

type fleetJSON struct {
	Nodes   []nodeJSON   `json:"nodes"`
	Workers []workerJSON `json:"workers,omitempty"`
	Streams []streamJSON `json:"streams,omitempty"`

	workers []*hopperclient.WorkerInfo
	streams []*hopperclient.StreamInfo
}

type workerJSON struct {
	Name         string   `json:"name"`
	Queue        string   `json:"queue"`
	Kinds        []string `json:"kinds"`
	OpenStreams  int32    `json:"open_streams"`
	WaitingPolls int32    `json:"waiting_polls"`
	Activated    int64    `json:"activated"`
	LastSeenAt   string   `json:"last_seen_at"`
	Held         bool     `json:"held"` // its resource governor holds it back
	// BatchKinds are the kinds it takes in batches (shown as KIND[batch] in the table).
	BatchKinds []string `json:"batch_kinds"`
}

type streamJSON struct {
	ID        string   `json:"id"`
	Worker    string   `json:"worker"`
	Queue     string   `json:"queue"`  // the first of Queues
	Queues    []string `json:"queues"` // the queues the stream's credit is shared between
	Kinds     []string `json:"kinds"`
	Credit    int32    `json:"credit"`
	InFlight  int32    `json:"in_flight"`
	Pushed    int64    `json:"pushed"`
	Completed int64    `json:"completed"`
	Failed    int64    `json:"failed"`
	Released  int64    `json:"released"`
	OpenedAt  string   `json:"opened_at"`
}

type nodeJSON struct {
	ID          string `json:"id"`
	Host        string `json:"host"`
	PID         int    `json:"pid"`
	StartedAt   string `json:"started_at"`
	HeartbeatAt string `json:"heartbeat_at"`
	Holding     bool   `json:"holding"` // its resource governor holds back new jobs
	// Idle: the node holds no jobs and does not heartbeat until it does; heartbeat_at is
	// then when it said so.
	Idle bool `json:"idle"`
}

func runWorkersLs(cmd *cobra.Command, _ []string) error {
	return withBackend(cmd, true, func(client backend) error {
		ctx := cmd.Context()
		nodes, err := client.Nodes(ctx)
		if err != nil {
			return fmt.Errorf("list nodes: %w", err)
		}
		var fleet fleetJSON
		for _, n := range nodes {
			fleet.Nodes = append(fleet.Nodes, nodeJSON{n.ID, n.Host, n.PID, jsonTime(n.StartedAt), jsonTime(n.HeartbeatAt),
				n.Holding, n.Idle})
		}
		if server, ok := client.(*hopperclient.Client); ok {
			if err := fleet.addRemote(ctx, server); err != nil {
				return err
			}
		}
		if wantJSON(cmd) {
			if fleet.Nodes == nil {
				fleet.Nodes = []nodeJSON{}
			}
			return printJSON(cmd.OutOrStdout(), fleet)
		}
		return printFleet(cmd.OutOrStdout(), nodes, &fleet, time.Now())
	})
}

// addRemote adds the remote workers and the job streams of server.
func (f *fleetJSON) addRemote(ctx context.Context, server *hopperclient.Client) error {
	var err error
	if f.workers, err = server.Workers(ctx); err != nil {
		return err
	}
	if f.streams, err = server.Streams(ctx); err != nil {
		return err
	}
	for _, wk := range f.workers {
		f.Workers = append(f.Workers, workerJSON{wk.Name, wk.Queue, wk.Kinds, int32(wk.OpenStreams),
			int32(wk.WaitingPolls), wk.Activated, jsonTime(wk.LastSeenAt), wk.Held, wk.BatchKinds})
	}
	for _, st := range f.streams {
		f.Streams = append(f.Streams, streamJSON{st.ID, st.Worker, firstQueue(st), st.Queues, st.Kinds,
			int32(st.Credit), int32(st.InFlight), st.Pushed, st.Completed, st.Failed, st.Released, jsonTime(st.OpenedAt)})
	}
	return nil
}

func printFleet(w io.Writer, nodes []*hopper.Node, f *fleetJSON, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tHOST\tPID\tSTARTED\tHEARTBEAT\tGOVERNOR")
	for _, n := range nodes {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", n.ID, n.Host, n.PID, relative(n.StartedAt, now),
			heartbeat(n, now), governorState(n.Holding))
	}
	if len(f.workers) > 0 {
		fmt.Fprintln(tw, "\nWORKER\tQUEUE\tKINDS\tSTREAMS\tPOLLING\tACTIVATED\tLAST_SEEN\tGOVERNOR")
		for _, wk := range f.workers {
			kinds := workerKinds(wk)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", wk.Name, wk.Queue, kinds, wk.OpenStreams,
				wk.WaitingPolls, wk.Activated, relative(wk.LastSeenAt, now), governorState(wk.Held))
		}
	}
	if len(f.streams) > 0 {
		fmt.Fprintln(tw, "\nSTREAM\tWORKER\tQUEUE\tCREDIT\tIN_FLIGHT\tPUSHED\tCOMPLETED\tFAILED\tRELEASED")
		for _, s := range f.streams {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", s.ID, s.Worker, strings.Join(s.Queues, ","), s.Credit,
				s.InFlight, s.Pushed, s.Completed, s.Failed, s.Released)
		}
	}
	return tw.Flush()
}

// firstQueue is the first of a stream's queues, "" without one.
func firstQueue(s *hopperclient.StreamInfo) string {
	if len(s.Queues) == 0 {
		return ""
	}
	return s.Queues[0]
}

// heartbeat shows a node's last heartbeat; an idle node's says since when it is idle: it does
// not heartbeat until it holds a job, so an old heartbeat is no sign of death.
func heartbeat(n *hopper.Node, now time.Time) string {
	if n.Idle {
		return "idle since " + relative(n.HeartbeatAt, now)
	}
	return relative(n.HeartbeatAt, now)
}

// governorState shows whether a resource governor holds a node or a worker back.
func governorState(holding bool) string {
	if holding {
		return "holding"
	}
	return "-"
}

// workerKinds is a worker's KINDS cell: its kinds ("*" for any), each it takes in batches
// marked "[batch]" (a batch kind outside its kinds too: a worker of any kind may batch some).
func workerKinds(wk *hopperclient.WorkerInfo) string {
	batch := make(map[string]bool, len(wk.BatchKinds))
	for _, k := range wk.BatchKinds {
		batch[k] = true
	}
	var cells []string
	for _, k := range wk.Kinds {
		if batch[k] {
			k += "[batch]"
			delete(batch, k[:len(k)-len("[batch]")])
		}
		cells = append(cells, k)
	}
	if len(wk.Kinds) == 0 {
		cells = append(cells, "*")
	}
	for _, k := range wk.BatchKinds {
		if batch[k] {
			cells = append(cells, k+"[batch]")
		}
	}
	return strings.Join(cells, ",")
}
