package upgrade

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// pgMigrations is where the PostgreSQL store's migrations live, from the repository's root.
const pgMigrations = "internal/store/postgres/migrations"

// fromEnv overrides the release the test upgrades from: any git revision (a tag, a commit).
const fromEnv = "HOPPER_UPGRADE_FROM"

// release is the version the test upgrades from.
type release struct {
	ref    string // as given or found: "v1.2.0", "772dbe8^"
	commit string // its full commit id
	why    string // how it was chosen, for the log
}

// previousRelease finds the release to upgrade from, in the repository at root, for the tree
// being tested there (HEAD and any uncommitted migration files):
//
//  1. $HOPPER_UPGRADE_FROM, when set;
//  2. else the newest tag v* reachable from HEAD that is not HEAD itself;
//  3. else (no release tagged yet) the last commit at the previous PostgreSQL schema version:
//     HEAD itself when the working tree holds migrations HEAD has not committed, otherwise the
//     first parent of the newest commit (along the first-parent line from HEAD) that added a
//     file to internal/store/postgres/migrations/. Its binary is the newest code a node of
//     the previous schema version could run, so the upgrade crosses exactly one migration
//     step, as a rolling upgrade from the previous release would.
//
// The test runs on PostgreSQL, so the PostgreSQL migrations are the ones that count; the
// SQLite store's are numbered on their own and a SQLite file has one process's binary.
func previousRelease(root string) (release, error) {
	if ref := os.Getenv(fromEnv); ref != "" {
		commit, err := git(root, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
		if err != nil {
			return release{}, fmt.Errorf("%s=%s: not a commit in %s: %w", fromEnv, ref, root, err)
		}
		return release{ref: ref, commit: commit, why: "$" + fromEnv}, nil
	}
	if shallow, err := git(root, "rev-parse", "--is-shallow-repository"); err != nil {
		return release{}, err
	} else if shallow == "true" {
		return release{}, errors.New("the clone is shallow: the previous release's commit may be missing " +
			"(git fetch --unshallow, or set " + fromEnv + ")")
	}
	head, err := git(root, "rev-parse", "HEAD")
	if err != nil {
		return release{}, err
	}
	tags, err := git(root, "tag", "--list", "v*", "--merged", "HEAD", "--sort=-v:refname")
	if err != nil {
		return release{}, err
	}
	for _, tag := range strings.Fields(tags) {
		commit, err := git(root, "rev-parse", "--verify", tag+"^{commit}")
		if err != nil {
			return release{}, err
		}
		if commit != head {
			return release{ref: tag, commit: commit, why: "the newest tag v* before HEAD"}, nil
		}
	}
	inTree, err := migrationsInTree(root)
	if err != nil {
		return release{}, err
	}
	inHead, err := migrationsAt(root, head)
	if err != nil {
		return release{}, err
	}
	if inTree > inHead {
		return release{ref: "HEAD", commit: head,
			why: fmt.Sprintf("no tag v*; the working tree adds PostgreSQL migrations %d to %d to HEAD's", inHead+1, inTree)}, nil
	}
	added, err := git(root, "log", "--first-parent", "--diff-filter=A", "-1", "--format=%H", "HEAD", "--", pgMigrations)
	if err != nil {
		return release{}, err
	}
	if added == "" {
		return release{}, fmt.Errorf("no commit adds a file to %s", pgMigrations)
	}
	parent, err := git(root, "rev-parse", "--verify", "--quiet", added+"^1")
	if err != nil {
		return release{}, fmt.Errorf("commit %s, which adds the newest PostgreSQL migration, has no parent to upgrade from", added)
	}
	return release{ref: added[:12] + "^", commit: parent,
		why: "no tag v*; the parent of the commit that added the newest PostgreSQL migration"}, nil
}

// migrationsAt counts the PostgreSQL migrations in commit's tree.
func migrationsAt(root, commit string) (int, error) {
	out, err := git(root, "ls-tree", "--name-only", commit+":"+pgMigrations)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range strings.Fields(out) {
		if strings.HasSuffix(name, ".sql") {
			n++
		}
	}
	return n, nil
}

// migrationsInTree counts the PostgreSQL migrations in the working tree: those the binary
// built from it embeds.
func migrationsInTree(root string) (int, error) {
	names, err := filepath.Glob(filepath.Join(root, pgMigrations, "*.sql"))
	return len(names), err
}

// git runs git in dir and returns its output, trimmed.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
