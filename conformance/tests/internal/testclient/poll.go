package testclient

import "time"

// Poll calls try until it reports done, at most every interval (a try that
// takes longer is followed at once by the next), for at most within from
// the call, and reports whether it did. try is called at least once, and
// once more when within has passed, so a condition met just in time
// counts. Poll is how the tests wait for something to happen: never a
// sleep as a means of synchronisation.
func Poll(within, interval time.Duration, try func() (done bool)) bool {
	deadline := time.Now().Add(within)
	end := time.NewTimer(within)
	defer end.Stop()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		late := !time.Now().Before(deadline)
		if try() {
			return true
		}
		if late {
			return false
		}
		select {
		case <-tick.C: // polling interval, not synchronisation
		case <-end.C:
		}
	}
}
