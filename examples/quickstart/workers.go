package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hopperjobs/hopper"
)

func newWorkers() *hopper.Workers {
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, resizeImage)
	hopper.AddWorkerFunc(ws, chargeCard)
	return ws
}

func resizeImage(ctx context.Context, job *hopper.Job[ResizeImage]) error {
	if err := pretendWork(ctx, 2*time.Millisecond); err != nil {
		return err
	}
	// The result is stored with the job; `hopper jobs show` prints it.
	return hopper.SetResult(ctx, map[string]string{
		"thumbnail": fmt.Sprintf("thumbs/%d_w%d.jpg", job.Args.ImageID, job.Args.Width),
	})
}

func chargeCard(ctx context.Context, job *hopper.Job[ChargeCard]) error {
	if err := pretendWork(ctx, 3*time.Millisecond); err != nil {
		return err
	}
	if rand.Float64() < 0.2 {
		// Returning an error retries the job after the backoff, until its attempts run out.
		return fmt.Errorf("card declined for order %d (attempt %d of %d)",
			job.Args.OrderID, job.Attempt, job.MaxAttempts)
	}
	return hopper.SetResult(ctx, map[string]any{"charged_cents": job.Args.AmountCents})
}

// pretendWork sleeps up to max, or until ctx ends (the job was canceled or timed out, or the
// client is stopping).
func pretendWork(ctx context.Context, max time.Duration) error {
	t := time.NewTimer(rand.N(max))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
