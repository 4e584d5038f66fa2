import Glibc

/// Runs a blocking `body` (a syscall that waits: poll, a blocking read) on a detached OS
/// thread of its own and resumes with its result, so the wait holds up no thread of the
/// async executor. When no thread can be created, `body` runs on the caller's thread.
public func runOnOwnThread<R: Sendable>(_ body: @escaping @Sendable () -> R) async -> R {
    await withCheckedContinuation { (c: CheckedContinuation<R, Never>) in
        let job = Job { c.resume(returning: body()) }
        let raw = Unmanaged.passRetained(job).toOpaque()
        var thread = pthread_t()
        let r = pthread_create(&thread, nil, { p in
            guard let p else { return nil }
            Unmanaged<Job>.fromOpaque(p).takeRetainedValue().run()
            return nil
        }, raw)
        if r == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<Job>.fromOpaque(raw).takeRetainedValue().run()
        }
    }
}

private final class Job: @unchecked Sendable {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}
