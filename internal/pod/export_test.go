package pod

// BusyBeat lets tests mark a long-lived process's Sandbox busy often.
var BusyBeat = &busyBeat
