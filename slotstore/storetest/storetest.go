package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

const (
	// shortLease expires during a test; tests wait for it in real time.
	shortLease = 150 * time.Millisecond
	// longLease never expires during a test.
	longLease = 10 * time.Second
	// patience bounds every wait for a lease to pass.
	patience = 5 * time.Second
	// slack absorbs the time a call takes and the difference between the
	// store's clock and the test's.
	slack = 50 * time.Millisecond
)

// Run checks that the stores newStore returns keep the slotstore contract.
// Each subtest gets a fresh, empty store from newStore, runs in parallel with
// the others, and closes the store when it ends.
func Run(t *testing.T, newStore func(t *testing.T) slotstore.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, slotstore.Store)
	}{
		{"ConcurrentClaimers", testConcurrentClaimers},
		{"Fences", testFences},
		{"BatchOrder", testBatchOrder},
		{"BatchMixed", testBatchMixed},
		{"BatchInvalid", testBatchInvalid},
		{"SlotNormalised", testSlotNormalised},
		{"Held", testHeld},
		{"FinishedIsFinal", testFinishedIsFinal},
		{"Takeover", testTakeover},
		{"OnCrashSkip", testOnCrashSkip},
		{"MaxAttempts", testMaxAttempts},
		{"Release", testRelease},
		{"StaleFence", testStaleFence},
		{"WrongFence", testWrongFence},
		{"TakeoverOnly", testTakeoverOnly},
		{"HistoryState", testHistoryState},
		{"HistoryBefore", testHistoryBefore},
		{"Renew", testRenew},
		{"InvalidParams", testInvalidParams},
		{"History", testHistory},
		{"Prune", testPrune},
		{"OverlapForbid", testOverlapForbid},
		{"OverlapForbidBatch", testOverlapForbidBatch},
		{"OverlapReplace", testOverlapReplace},
		{"OverlapReplaceBatch", testOverlapReplaceBatch},
		{"OverlapQueue", testOverlapQueue},
		{"OverlapQueueBatch", testOverlapQueueBatch},
		{"OverlapQueueCrash", testOverlapQueueCrash},
		{"Retry", testRetry},
		{"Skip", testSkip},
		{"SkipInvalid", testSkipInvalid},
		{"Pauses", testPauses},
		{"PauseNotes", testPauseNotes},
		{"Beats", testBeats},
		{"BeatLive", testBeatLive},
		{"BeatInvalid", testBeatInvalid},
		{"Manual", testManual},
		{"Closed", testClosed},
		{"Generation", testGeneration},
		{"EnrollConcurrently", testEnrollConcurrently},
		{"EnrollNewest", testEnrollNewest},
		{"SkipNotBefore", testSkipNotBefore},
		{"ClaimNotBefore", testClaimNotBefore},
		{"ClaimNotAfter", testClaimNotAfter},
		{"RenewFinished", testRenewFinished},
		{"Incarnation", testIncarnation},
		{"Backfill", testBackfill},
		{"BackfillForbid", testBackfillForbid},
		{"BackfillInvalid", testBackfillInvalid},
		{"BackfillConcurrent", testBackfillConcurrent},
		{"BackfillGeneration", testBackfillGeneration},
		{"BackfillRetention", testBackfillRetention},
		{"CatalogEnroll", testCatalogEnroll},
		{"CatalogRule", testCatalogRule},
		{"CatalogClaims", testCatalogClaims},
		{"CatalogInvalid", testCatalogInvalid},
		{"CatalogPages", testCatalogPages},
		{"CatalogBounds", testCatalogBounds},
		{"CatalogConcurrent", testCatalogConcurrent},
		{"SchedulePut", testSchedulePut},
		{"ScheduleVersions", testScheduleVersions},
		{"ScheduleDelete", testScheduleDelete},
		{"ScheduleClaims", testScheduleClaims},
		{"ScheduleConfig", testScheduleConfig},
		{"ScheduleList", testScheduleList},
		{"ScheduleChanges", testScheduleChanges},
		{"ScheduleInvalid", testScheduleInvalid},
		{"ScheduleConcurrent", testScheduleConcurrent},
		{"ScheduleWatch", testScheduleWatch},
		{"ActionsAppend", testActionsAppend},
		{"ActionsInvalid", testActionsInvalid},
		{"ActionsFilters", testActionsFilters},
		{"ActionsPages", testActionsPages},
		{"ActionsConcurrent", testActionsConcurrent},
		{"ActionsPrune", testActionsPrune},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t, newStore))
		})
	}
}

// open returns a fresh store that is closed when t ends, before the
// factory's own cleanup runs.
func open(t *testing.T, newStore func(t *testing.T) slotstore.Store) slotstore.Store {
	s := newStore(t)
	if s == nil {
		t.Fatal("newStore returned nil")
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, slotstore.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}
