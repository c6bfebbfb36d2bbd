package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The root command's summary (its Long text, which `hopper --help` prints first) names every
// command, so that a new one cannot be left out of it.
func TestRootHelpNamesEveryCommand(t *testing.T) {
	t.Parallel()
	root := newRootCmd()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var named int
	for _, cmd := range root.Commands() {
		if cmd.Hidden || cmd.Name() == "help" || cmd.Name() == "completion" {
			continue
		}
		require.Contains(t, root.Long, "("+cmd.Name()+")", "hopper --help's summary names %s", cmd.Name())
		named++
	}
	require.GreaterOrEqual(t, named, 12)
}

// Every table has one word per header and per cell but the last (free text such as an
// error), so that awk and cut split its columns: each line has as many words as the header,
// or more in its last column.
func TestTablesSplitOnBlanks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docFixture(t, dir)
	b := &testBundle{db: dir + "/doc.db"}
	res := b.run(t, "keys", "create", "--name", "ops", "--scope", "read", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var key struct{ Key string }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &key))
	require.Equal(t, ExitOK, b.run(t, "dlq", "replay", "--all", "--kind", "charge-card", "--limit", "1", "--yes").code)
	for _, args := range [][]string{{"jobs", "ls"}, {"dlq", "ls", "--include-replayed"}, {"dlq", "replays"},
		{"queues", "ls"}, {"kinds", "ls"}, {"keys", "ls"}} {
		res := b.run(t, args...)
		require.Equal(t, ExitOK, res.code, "%v: %s", args, res.stderr)
		lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
		require.Greater(t, len(lines), 1, "%v prints rows: %s", args, res.stdout)
		header := strings.Fields(lines[0])
		for _, h := range header {
			require.Equal(t, strings.ToUpper(h), h, "%v: header %q in upper case", args, h)
		}
		// Where each header starts, each row's cell starts: a cell that is not one word
		// shows as a blank inside it.
		var starts []int
		for i := range len(lines[0]) {
			if lines[0][i] != ' ' && (i == 0 || lines[0][i-1] == ' ') {
				starts = append(starts, i)
			}
		}
		require.Len(t, starts, len(header), "%v: one word per header", args)
		for _, l := range lines[1:] {
			require.Len(t, strings.Fields(l[:starts[len(starts)-1]]), len(header)-1,
				"%v: %q has a cell of several words, or none", args, l)
			if header[len(header)-1] != "LAST_ERROR" { // free text, last
				require.Len(t, strings.Fields(l), len(header), "%v: %q's last cell is not one word", args, l)
			}
		}
	}
}
