// Package seccomp assembles the system-call filter every sandboxed
// command runs under (bubblewrap's --seccomp), with elastic's
// go-seccomp-bpf. On amd64 the sandbox embeds the filter it assembles
// (a test keeps the two equal), so that a program starting a command
// does not initialise the library's tables of every architecture.
package seccomp

import (
	"encoding/binary"
	"fmt"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// denied are the system calls no sandboxed process may make, as defence
// in depth behind the dropped capabilities and namespaces: the kernel's
// keyrings (shared by every sandbox of one uid), eBPF, perf and io_uring
// (kernel attack surface), tracing and reading other processes, every mount and
// namespace API, module and kexec loading, and the rest of what only an
// administrator does. Each fails with EPERM.
var denied = []string{
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
	"unshare", "setns",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"open_by_handle_at", "name_to_handle_at",
	"swapon", "swapoff", "reboot", "acct", "quotactl", "syslog",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"iopl", "ioperm", "lookup_dcookie", "vhangup",
}

// Program assembles the filter for bwrap's --seccomp: the raw
// struct sock_filter array. A system call of another architecture (the
// 32-bit entry points on x86-64) fails with ENOSYS, so the list cannot be
// bypassed through them.
func Program() ([]byte, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	// socket(2) only for the families a command has a use for: others
	// (vsock, which ignores network namespaces and reaches the hypervisor;
	// AF_ALG, rds, tipc, …) are kernel surface or a way out.
	var otherFamily seccomp.ArgumentConditions
	for _, f := range []uint64{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK} {
		otherFamily = append(otherFamily, seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: f})
	}
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno, Names: denied},
			{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{{Name: "socket", Conditions: otherFamily}}},
		},
	}
	inner, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	prog := append([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
	}, inner...)
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	out := make([]byte, 0, 8*len(raw))
	for _, r := range raw {
		out = binary.NativeEndian.AppendUint16(out, r.Op)
		out = append(out, r.Jt, r.Jf)
		out = binary.NativeEndian.AppendUint32(out, r.K)
	}
	return out, nil
}
