/// An AsyncSequence of `Element` that ends without error when its source finishes, or
/// throws a ``BluetoothError`` saying why it ended early (the link went down, the
/// controller went away).
public struct BluetoothStream<Element: Sendable>: AsyncSequence, Sendable {
    /// How the stream ends early.
    public typealias Failure = BluetoothError
    let base: AsyncThrowingStream<Element, any Error>

    init(_ base: AsyncThrowingStream<Element, any Error>) { self.base = base }

    /// One iterator per stream: the elements are not shared between iterators.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeAsyncIterator()) }

    /// Iterates the stream; `next()` throws the ``BluetoothError`` that ended it.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<Element, any Error>.AsyncIterator

        /// The next element, nil at the end, or the error that ended the stream.
        public mutating func next() async throws(BluetoothError) -> Element? {
            do { return try await base.next() } catch { throw BluetoothError(error) }
        }

        /// ``next()`` on the caller's actor.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(BluetoothError) -> Element? {
            do { return try await base.next(isolation: actor) } catch { throw BluetoothError(error) }
        }
    }
}
