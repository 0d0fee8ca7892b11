//go:build !race

package selfexec

// raceEnabled reports whether this binary was built with -race.
const raceEnabled = false
