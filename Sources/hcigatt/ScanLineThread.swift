import BluetoothWire
import HCIGATTFormat
#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// Formats a replay's scan results on a thread of its own while the caller reads the
/// capture and runs the scanner, in the same order and bytes as one thread. Batches go
/// over a queue and come back emptied, so nothing is allocated per batch once it runs.
/// Which half costs more depends on the lines: a text line costs about what reading its
/// report does, a JSON line twice that. So when this thread is behind (``depth`` batches
/// waiting) the caller formats the next batch itself, with a formatter of its own, and
/// queues the text, which this thread writes in its turn; beyond twice ``depth`` the
/// caller waits (a slow reader of stdout holds both). `HCIGATT_REPLAY_SHARING=never` keeps
/// every batch on this thread, `=alternate` has the caller format every second batch
/// whatever the queue (the tests' deterministic way through both paths). When no thread
/// can be made, each batch is formatted on the caller's thread instead.
/// `CaptureReplay.lineFormatter()` makes the formatters, so every path formats alike (a
/// formatter's caches change its speed, not its bytes).
final class ScanLineThread: @unchecked Sendable {
    /// Lines handed over at once.
    static let batchSize = 256
    /// Batches waiting before the caller formats batches itself (and twice that before it
    /// waits).
    static let depth = 4

    /// A batch the caller formatted itself.
    final class FormattedBatch {
        // One thread at a time (the queue's lock hands it over): no dynamic exclusivity
        // check per line.
        @exclusivity(unchecked) var writer: FieldWriter
        init(format: FieldWriter.Format) { writer = FieldWriter(format: format, out: OutputBuffer(capacity: 64 * 1024)) }
    }

    /// When the caller formats a batch itself.
    enum Sharing {
        case whenBehind, never, alternate
    }

    /// Lines to format, or a batch's text to write as it is.
    enum Work {
        case lines([ScanLine])
        case text(FormattedBatch)
    }

    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    /// Broadcast when the queue changes or closes (one waiter on each side at most).
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Under `lock`:
    private var queue: [Work] = []
    private var spare: [[ScanLine]] = []
    private var spareText: [FormattedBatch] = []
    private var closed = false
    // The caller's:
    private var thread = pthread_t()
    private var running = false
    @exclusivity(unchecked) private var helper: ScanFormatter
    private let format: FieldWriter.Format
    private let sharing: Sharing
    private var submitted = 0
    // The formatting thread's while it runs, then the caller's (one thread at a time, so
    // no dynamic exclusivity check per line: those were 3 % of a JSON replay):
    @exclusivity(unchecked) private var formatter: ScanFormatter
    @exclusivity(unchecked) private var writer: FieldWriter

    init(formatter: ScanFormatter, format: FieldWriter.Format) {
        self.formatter = formatter
        self.helper = formatter
        self.format = format
        switch getenv("HCIGATT_REPLAY_SHARING").map({ String(cString: $0) }) {
        case "never": sharing = .never
        case "alternate": sharing = .alternate
        default: sharing = .whenBehind
        }
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

    /// Hands `batch` over and leaves an empty one in it: as lines while this thread keeps
    /// up, else formatted here (see the type's comment).
    func submit(_ batch: inout [ScanLine]) {
        guard !batch.isEmpty else { return }
        guard running else {
            format(batch)
            batch.removeAll(keepingCapacity: true)
            return
        }
        pthread_mutex_lock(lock)
        while queue.count >= 2 * Self.depth { pthread_cond_wait(changed, lock) }
        let share = switch sharing {
        case .whenBehind: queue.count >= Self.depth
        case .never: false
        case .alternate: submitted % 2 == 1
        }
        submitted &+= 1
        if !share {
            var full = spare.popLast() ?? []
            swap(&full, &batch)
            queue.append(.lines(full))
            pthread_cond_broadcast(changed)
            pthread_mutex_unlock(lock)
            return
        }
        let text = spareText.popLast() ?? FormattedBatch(format: format)
        pthread_mutex_unlock(lock)
        // The reader went away (`| head`): nothing to format; the caller stops after this.
        if !Console.stdoutClosed {
            for line in batch { helper.write(line.device, isNew: line.isNew, into: &text.writer) }
        }
        batch.removeAll(keepingCapacity: true)
        pthread_mutex_lock(lock)
        queue.append(.text(text))
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
            let work = queue.removeFirst()
            pthread_cond_broadcast(changed)
            pthread_mutex_unlock(lock)
            switch consume work {
            case .lines(var batch):
                format(batch)
                batch.removeAll(keepingCapacity: true)
                pthread_mutex_lock(lock)
                spare.append(batch)
            case .text(let text):
                if !Console.stdoutClosed {
                    // What this thread wrote before goes first; the batch's text is then
                    // written as it is (a quarter megabyte of JSON not copied).
                    Console.write(&writer.out)
                    Console.flush()
                    Console.write(&text.writer.out)
                }
                text.writer.out.removeAll()
                pthread_mutex_lock(lock)
                spareText.append(text)
            }
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
