package main

import "syscall"

// setParentDeathSignal asks the kernel to send sig to this process when its parent dies, however
// it dies (SIGKILL included).
func setParentDeathSignal(sig syscall.Signal) error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(sig), 0); errno != 0 {
		return errno
	}
	return nil
}

// childProcAttr makes a child that the kernel kills when this process dies, in a process group of
// its own. (The signal is tied to the thread that starts the child; the Go runtime keeps its
// threads for the life of the process unless a goroutine exits locked to one, which none here does.)
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
