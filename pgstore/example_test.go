package pgstore_test

import (
	"context"
	"database/sql"
	"log"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/pgstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver for database/sql
)

// SendInvoice is the payload of a send-invoice job.
type SendInvoice struct {
	InvoiceID int `json:"invoice_id"`
}

func (SendInvoice) Kind() string { return "send-invoice" }

// Enqueue a job in the application's own pgx transaction: the invoice row and the job are
// committed together, or neither is.
func ExampleStore_Tx() {
	ctx := context.Background()
	url := "postgres://app@db:5432/app?sslmode=require"
	st, err := pgstore.Open(ctx, pgstore.Config{URL: url})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	client, err := hopper.NewClient(hopper.Config{Store: st}) // enqueue-only
	if err != nil {
		log.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, url) // the application's own pool
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var id int
		if err := tx.QueryRow(ctx, `INSERT INTO invoices (amount_cents) VALUES ($1) RETURNING id`, 1250).Scan(&id); err != nil {
			return err
		}
		_, err := client.EnqueueTx(ctx, st.Tx(tx), SendInvoice{InvoiceID: id}, nil)
		return err // an error rolls back the invoice and the job
	})
	if err != nil {
		log.Fatal(err)
	}
}

// The same with database/sql. The *sql.DB must use the pgx driver (package
// github.com/jackc/pgx/v5/stdlib, driver name "pgx").
func ExampleStore_SQLTx() {
	ctx := context.Background()
	url := "postgres://app@db:5432/app?sslmode=require"
	st, err := pgstore.Open(ctx, pgstore.Config{URL: url})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	client, err := hopper.NewClient(hopper.Config{Store: st})
	if err != nil {
		log.Fatal(err)
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback() // no-op after Commit
	var id int
	if err := tx.QueryRowContext(ctx, `INSERT INTO invoices (amount_cents) VALUES ($1) RETURNING id`, 1250).Scan(&id); err != nil {
		log.Fatal(err)
	}
	if _, err := client.EnqueueTx(ctx, st.SQLTx(tx), SendInvoice{InvoiceID: id}, nil); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}
}
