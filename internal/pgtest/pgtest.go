// Package pgtest gives tests a PostgreSQL database: the server named by
// HOPPER_TEST_DATABASE_URL (default a local trust-auth server) and a fresh schema per test,
// dropped at cleanup. Without a server tests skip, except under CI=true, where they fail.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultURL is the test server when HOPPER_TEST_DATABASE_URL is not set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// URL is the test database's connection string.
func URL() string {
	if u := os.Getenv("HOPPER_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Require skips t when PostgreSQL can't be reached, or fails it under CI=true, where the
// PostgreSQL tests must run.
func Require(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, URL())
	if err == nil {
		err = conn.Ping(ctx)
		conn.Close(ctx)
	}
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("PostgreSQL at %s is required in CI: %v", URL(), err)
	}
	t.Skipf("PostgreSQL at %s is not reachable (set HOPPER_TEST_DATABASE_URL): %v", URL(), err)
}

// FreshSchema returns the name of a new schema (prefix + random) and drops it, with all it
// holds, when the test ends.
func FreshSchema(t testing.TB, prefix string) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := prefix + hex.EncodeToString(b)
	t.Cleanup(func() {
		if err := DropSchema(schema); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// DropSchema drops schema and everything in it.
func DropSchema(schema string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, URL())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	return err
}
