//go:build !race

package main

// builtWithRace reports whether this binary was built with -race.
const builtWithRace = false
