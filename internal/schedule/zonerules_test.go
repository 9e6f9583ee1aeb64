package schedule

import (
	"testing"
	"time"
)

// TestZoneRules: one digest per zone's rules, and another for a zone whose
// offsets differ (as two tzdata versions would), the same one for a zone
// loaded twice.
func TestZoneRules(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := time.LoadLocation("Europe/Berlin")
	if ZoneRules(berlin) != ZoneRules(again) || ZoneRules(berlin) == "" {
		t.Errorf("Berlin twice: %q and %q", ZoneRules(berlin), ZoneRules(again))
	}
	// A made-up zone of the same name with fixed offset: the digest is by
	// content, so it must not be served from the cache of the real one.
	fake := time.FixedZone("Europe/Paris-fake", 3600)
	if ZoneRules(fake) == ZoneRules(berlin) {
		t.Error("a fixed zone digests like Berlin's rules")
	}
	if ZoneRules(time.UTC) == ZoneRules(fake) {
		t.Error("UTC digests like a +01:00 zone")
	}
}
