// Package migrate loads Hopper's numbered, embedded SQL migrations. Each store applies them in
// order inside its own transactions and records the versions it applied.
package migrate

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one numbered SQL script, e.g. 0001_init.sql.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load reads every NNNN_name.sql file in dir of fsys, sorted by version. Versions must be unique
// and start at 1 without gaps, so a missing file is caught when the binary is built and tested.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		m, err := parse(fsys, dir, e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d (versions start at 1 without gaps)", m.Name, i+1)
		}
	}
	return out, nil
}

func parse(fsys fs.FS, dir, name string) (Migration, error) {
	num, _, ok := strings.Cut(name, "_")
	if !ok {
		return Migration{}, fmt.Errorf("migration %s: name must be NNNN_description.sql", name)
	}
	v, err := strconv.Atoi(num)
	if err != nil || v <= 0 {
		return Migration{}, fmt.Errorf("migration %s: bad version %q", name, num)
	}
	body, err := fs.ReadFile(fsys, path.Join(dir, name))
	if err != nil {
		return Migration{}, fmt.Errorf("read migration %s: %w", name, err)
	}
	return Migration{Version: v, Name: strings.TrimSuffix(name, ".sql"), SQL: string(body)}, nil
}
