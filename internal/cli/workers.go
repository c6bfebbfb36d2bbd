package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
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

	workers []*hopperv1.Worker
	streams []*hopperv1.Stream
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
		if r, ok := client.(*remote); ok {
			ws, err := r.admin.ListWorkers(ctx, &hopperv1.ListWorkersRequest{})
			if err != nil {
				return remoteErr(err)
			}
			ss, err := r.admin.ListStreams(ctx, &hopperv1.ListStreamsRequest{})
			if err != nil {
				return remoteErr(err)
			}
			fleet.workers, fleet.streams = ws.GetWorkers(), ss.GetStreams()
			for _, wk := range fleet.workers {
				fleet.Workers = append(fleet.Workers, workerJSON{wk.GetName(), wk.GetQueue(), wk.GetKinds(), wk.GetOpenStreams(),
					wk.GetWaitingPolls(), wk.GetActivated(), jsonTime(timeOf(wk.GetLastSeenAt())), wk.GetHeld()})
			}
			for _, st := range fleet.streams {
				fleet.Streams = append(fleet.Streams, streamJSON{st.GetId(), st.GetWorker(), st.GetQueue(), streamQueues(st), st.GetKinds(),
					st.GetCredit(), st.GetInFlight(), st.GetPushed(), st.GetCompleted(), st.GetFailed(), st.GetReleased(),
					jsonTime(timeOf(st.GetOpenedAt()))})
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

func printFleet(w io.Writer, nodes []*hopper.Node, f *fleetJSON, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tHOST\tPID\tSTARTED\tHEARTBEAT\tGOVERNOR")
	for _, n := range nodes {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", n.ID, n.Host, n.PID, relative(n.StartedAt, now),
			heartbeat(n, now), governorState(n.Holding))
	}
	if len(f.workers) > 0 {
		fmt.Fprintln(tw, "\nWORKER\tQUEUE\tKINDS\tSTREAMS\tPOLLING\tACTIVATED\tLAST SEEN\tGOVERNOR")
		for _, wk := range f.workers {
			kinds := strings.Join(wk.GetKinds(), ",")
			if kinds == "" {
				kinds = "*"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", wk.GetName(), wk.GetQueue(), kinds, wk.GetOpenStreams(),
				wk.GetWaitingPolls(), wk.GetActivated(), relative(wk.GetLastSeenAt().AsTime(), now), governorState(wk.GetHeld()))
		}
	}
	if len(f.streams) > 0 {
		fmt.Fprintln(tw, "\nSTREAM\tWORKER\tQUEUE\tCREDIT\tIN FLIGHT\tPUSHED\tCOMPLETED\tFAILED\tRELEASED")
		for _, s := range f.streams {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", s.GetId(), s.GetWorker(), strings.Join(streamQueues(s), ","), s.GetCredit(),
				s.GetInFlight(), s.GetPushed(), s.GetCompleted(), s.GetFailed(), s.GetReleased())
		}
	}
	return tw.Flush()
}

// streamQueues are a stream's queues (a server that knows of one queue per stream lists
// only queue).
func streamQueues(s *hopperv1.Stream) []string {
	if len(s.GetQueues()) > 0 {
		return s.GetQueues()
	}
	return []string{s.GetQueue()}
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
