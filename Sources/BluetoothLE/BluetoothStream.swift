/// An AsyncSequence of `Element` that ends without error when its source finishes, or
/// throws a ``BluetoothError`` saying why it ended early (the link went down, the
/// controller went away). It reads its source directly, so the source's bounds and
/// back-pressure hold: an indication is confirmed when the program takes it, not before.
public struct BluetoothStream<Element: Sendable>: AsyncSequence, Sendable {
    /// How the stream ends early.
    public typealias Failure = BluetoothError
    private let make: @Sendable () -> AsyncIterator

    init<Base: AsyncSequence & Sendable>(_ base: Base, transform: @escaping @Sendable (Base.Element) -> Element?) {
        make = {
            let box = IteratorBox(base.makeAsyncIterator())
            return AsyncIterator {
                // Elements the transform drops are skipped.
                while let e = try await box.iterator.next() {
                    if let mapped = transform(e) { return mapped }
                }
                return nil
            }
        }
    }

    /// One iterator per stream: the elements are not shared between iterators.
    public func makeAsyncIterator() -> AsyncIterator { make() }

    /// Iterates the stream; `next()` throws the ``BluetoothError`` that ended it.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let step: () async throws -> Element?

        /// The next element, nil at the end, or the error that ended the stream.
        public mutating func next() async throws(BluetoothError) -> Element? {
            do { return try await step() } catch { throw BluetoothError(error) }
        }
    }
}

/// The source's iterator, mutable behind a reference (one consumer).
final class IteratorBox<I: AsyncIteratorProtocol> {
    var iterator: I
    init(_ i: I) { iterator = i }
}
