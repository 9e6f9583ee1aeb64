package harness

import (
	"fmt"
	"strconv"
	"time"
)

func itoa(i int) string { return strconv.Itoa(i) }

// count writes 1000 as 1k, 100000 as 100k and 1000000 as 1M.
func count(n int) string {
	if n >= 1000000 && n%1000000 == 0 {
		return itoa(n/1000000) + "M"
	}
	if n >= 1000 && n%1000 == 0 {
		return itoa(n/1000) + "k"
	}
	return itoa(n)
}

// ms writes d in milliseconds with three significant figures or so.
func ms(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	switch {
	case f >= 100:
		return fmt.Sprintf("%.0f", f)
	case f >= 10:
		return fmt.Sprintf("%.1f", f)
	default:
		return fmt.Sprintf("%.2f", f)
	}
}

// ratio writes a/b as ×r, or "–" when b is zero.
func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	r := a / b
	switch {
	case r >= 100:
		return fmt.Sprintf("×%.0f", r)
	case r >= 10:
		return fmt.Sprintf("×%.1f", r)
	default:
		return fmt.Sprintf("×%.2f", r)
	}
}

// num writes f with at most three decimals, dropping trailing noise.
func num(f float64) string {
	switch {
	case f >= 1000:
		return fmt.Sprintf("%.0f", f)
	case f >= 10:
		return fmt.Sprintf("%.1f", f)
	default:
		return fmt.Sprintf("%.3g", f)
	}
}

func bytesPerJob(b float64) string {
	if b >= 10*1024 {
		return fmt.Sprintf("%.1f KiB", b/1024)
	}
	return fmt.Sprintf("%.0f B", b)
}
