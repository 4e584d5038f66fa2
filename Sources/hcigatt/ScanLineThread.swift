import BluetoothWire
import HCIGATTFormat
#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// Formats a replay's scan results on a thread of its own while the caller reads the
/// capture and runs the scanner: the two halves cost about the same, so with two cores
/// the lines come out up to twice as fast, in the same order and bytes (one thread formats
/// them all, in the order they were handed in). Batches go over a queue of at most
/// ``depth`` and come back emptied, so nothing is allocated per batch once it runs. When
/// no thread can be made, each batch is formatted on the caller's thread instead.
/// `CaptureReplay.lineFormatter()` makes the formatter, so both paths format alike.
/// (Two formatting threads beside the caller were no faster on two cores.)
final class ScanLineThread: @unchecked Sendable {
    /// Lines handed over at once.
    static let batchSize = 256
    /// Batches waiting before the caller waits.
    static let depth = 4

    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    /// Broadcast when the queue changes or closes (one waiter on each side at most).
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Under `lock`:
    private var queue: [[ScanLine]] = []
    private var spare: [[ScanLine]] = []
    private var closed = false
    // The caller's:
    private var thread = pthread_t()
    private var running = false
    // The formatting thread's while it runs, then the caller's:
    private var formatter: ScanFormatter
    private var writer: FieldWriter

    init(formatter: ScanFormatter, format: FieldWriter.Format) {
        self.formatter = formatter
        writer = FieldWriter(format: format, out: OutputBuffer(capacity: Console.blockSize + 4096))
        pthread_mutex_init(lock, nil)
        pthread_cond_init(changed, nil)
    }

    deinit {
        pthread_cond_destroy(changed)
        pthread_mutex_destroy(lock)
        changed.deallocate()
        lock.deallocate()
    }

    /// Starts the formatting thread, unless `HCIGATT_REPLAY_ONE_THREAD` is set (the tests
    /// compare both ways; it is also the path taken when no thread can be made).
    func start() {
        guard getenv("HCIGATT_REPLAY_ONE_THREAD") == nil else { return }
        let me = Unmanaged.passRetained(self).toOpaque()
        let r = pthread_create(&thread, nil, { p in
            guard let p else { return nil }
            Unmanaged<ScanLineThread>.fromOpaque(p).takeRetainedValue().run()
            return nil
        }, me)
        if r == 0 { running = true } else { Unmanaged<ScanLineThread>.fromOpaque(me).release() }
    }

    /// Hands `batch` over (waiting while ``depth`` batches wait) and leaves an empty one in it.
    func submit(_ batch: inout [ScanLine]) {
        guard !batch.isEmpty else { return }
        guard running else {
            format(batch)
            batch.removeAll(keepingCapacity: true)
            return
        }
        pthread_mutex_lock(lock)
        while queue.count >= Self.depth { pthread_cond_wait(changed, lock) }
        var full = spare.popLast() ?? []
        swap(&full, &batch)
        queue.append(full)
        pthread_cond_broadcast(changed)
        pthread_mutex_unlock(lock)
    }

    /// Waits until every line handed over is formatted, ends the thread and writes what
    /// is left to stdout.
    func finish() {
        if running {
            pthread_mutex_lock(lock)
            closed = true
            pthread_cond_broadcast(changed)
            pthread_mutex_unlock(lock)
            pthread_join(thread, nil)
            running = false
        }
        Console.write(&writer.out)
    }

    private func run() {
        pthread_mutex_lock(lock)
        while true {
            while queue.isEmpty && !closed { pthread_cond_wait(changed, lock) }
            if queue.isEmpty { break }
            var batch = queue.removeFirst()
            pthread_cond_broadcast(changed)
            pthread_mutex_unlock(lock)
            format(batch)
            batch.removeAll(keepingCapacity: true)
            pthread_mutex_lock(lock)
            spare.append(batch)
        }
        pthread_mutex_unlock(lock)
    }

    private func format(_ batch: [ScanLine]) {
        // The reader went away (`| head`): the caller stops at its next batch.
        guard !Console.stdoutClosed else { return }
        for line in batch {
            formatter.write(line.device, isNew: line.isNew, into: &writer)
            if writer.out.count >= Console.blockSize { Console.write(&writer.out) }
        }
    }
}
