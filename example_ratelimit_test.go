package hopper_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/sqlitestore"
)

// A rate limit bounds how many jobs of a kind (or a queue) start per period, across every
// process sharing the store; jobs over it wait, queued. Operators write limits as N/DURATION,
// which ParseRate reads and refuses, naming the field, when it is malformed.
func ExampleClient_SetRateLimit() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "hopper-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: filepath.Join(dir, "hopper.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	client, err := hopper.NewClient(hopper.Config{Store: st})
	if err != nil {
		log.Fatal(err)
	}

	rate, err := hopper.ParseRate("rate", "10/1s")
	if err != nil {
		log.Fatal(err)
	}
	if err := client.SetRateLimit(ctx, hopper.RateLimit{Kind: "send-invoice", Rate: rate}); err != nil {
		log.Fatal(err)
	}
	limits, err := client.RateLimits(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(limits[0].Kind, limits[0].Rate)

	_, err = hopper.ParseRate("rate", "0/1s")
	var ve *hopper.ValidationError
	fmt.Println(errors.As(err, &ve), ve.Field)
	// Output:
	// send-invoice 10/1s
	// true rate
}
