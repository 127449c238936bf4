#pragma once
// A hash map that grows without a whole-table rehash. std::unordered_map doubles its bucket
// array and relinks every node in the insert that crosses the load factor: at 65,000 nodes
// that one insert walks them all (2.6-11.5 ms of a shard's turn when a stream's 74,000
// subscriptions arrive, bench/RESULTS.md sessions 9 and 10). Here the new, twice as large
// bucket array is allocated (big ones from mmap: untouched pages cost nothing) and the old one is moved
// into it a few buckets per insert (Redis's incremental rehash), so every insert costs O(1)
// and the old array is empty long before the next doubling.
//
// The subset of std::unordered_map the server uses: find (heterogeneous when Hash and Eq
// are transparent), try_emplace/emplace/operator[], erase by iterator or key, iteration,
// size. Differences: erase does not move buckets, so erasing the iterated element while
// iterating (`it = m.erase(it)`) is safe, but an insert invalidates iterators (references
// to elements stay valid, as with unordered_map); no shrinking; the order is unspecified.
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <new>
#include <sys/mman.h>
#include <tuple>
#include <type_traits>
#include <utility>

namespace base {

template <class K, class V, class Hash = std::hash<K>, class Eq = std::equal_to<K>>
class inc_map {
  struct node {
    template <class KK, class... A>
    node(std::size_t h, KK&& k, A&&... a)
        : kv(std::piecewise_construct, std::forward_as_tuple(std::forward<KK>(k)),
             std::forward_as_tuple(std::forward<A>(a)...)),
          hash(h) {}
    std::pair<const K, V> kv;
    std::size_t hash;
    node* next = nullptr;
  };
  struct table {
    node** b = nullptr;
    std::size_t n = 0;  // buckets, a power of two; 0 with no array
  };

 public:
  using key_type = K;
  using mapped_type = V;
  using value_type = std::pair<const K, V>;
  using size_type = std::size_t;
  // Old buckets moved per insert: the old array (n buckets, at most n nodes) is empty after
  // n/4 inserts, the next doubling comes after n more.
  static constexpr std::size_t kStepBuckets = 4;

  template <bool Const>
  class iter {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = inc_map::value_type;
    using difference_type = std::ptrdiff_t;
    using reference = std::conditional_t<Const, const value_type&, value_type&>;
    using pointer = std::conditional_t<Const, const value_type*, value_type*>;
    iter() = default;
    template <bool C2, class = std::enable_if_t<Const && !C2>>
    iter(const iter<C2>& o) : _m(o._m), _t(o._t), _b(o._b), _p(o._p) {}  // NOLINT: iterator -> const_iterator
    reference operator*() const { return _p->kv; }
    pointer operator->() const { return &_p->kv; }
    iter& operator++() {
      _p = _p->next;
      if (_p == nullptr) seek(_t, _b + 1);
      return *this;
    }
    iter operator++(int) {
      iter r = *this;
      ++*this;
      return r;
    }
    template <bool C2>
    bool operator==(const iter<C2>& o) const { return _p == o._p; }
    template <bool C2>
    bool operator!=(const iter<C2>& o) const { return _p != o._p; }

   private:
    friend class inc_map;
    template <bool>
    friend class iter;
    iter(const inc_map* m, int t, std::size_t b, node* p) : _m(m), _t(t), _b(b), _p(p) {}
    // The first element at or after bucket `b` of table `t` (0: the current one, 1: the old).
    void seek(int t, std::size_t b) {
      for (; t < 2; ++t, b = 0) {
        const table& tb = t == 0 ? _m->_cur : _m->_old;
        for (; b < tb.n; ++b)
          if (tb.b[b] != nullptr) {
            _t = t;
            _b = b;
            _p = tb.b[b];
            return;
          }
      }
      _p = nullptr;
    }
    const inc_map* _m = nullptr;
    int _t = 0;
    std::size_t _b = 0;
    node* _p = nullptr;
  };
  using iterator = iter<false>;
  using const_iterator = iter<true>;

  inc_map() = default;
  inc_map(const inc_map&) = delete;
  inc_map& operator=(const inc_map&) = delete;
  inc_map(inc_map&& o) noexcept { swap(o); }
  inc_map& operator=(inc_map&& o) noexcept {
    if (this != &o) {
      clear();
      swap(o);
    }
    return *this;
  }
  ~inc_map() { clear(); }

  void swap(inc_map& o) noexcept {
    std::swap(_cur, o._cur);
    std::swap(_old, o._old);
    std::swap(_moved, o._moved);
    std::swap(_size, o._size);
    std::swap(_relinked, o._relinked);
  }

  std::size_t size() const noexcept { return _size; }
  bool empty() const noexcept { return _size == 0; }
  // Buckets of the current array, and whether an old one is still being moved (tests).
  std::size_t bucket_count() const noexcept { return _cur.n; }
  bool moving() const noexcept { return _old.b != nullptr; }
  // Nodes moved from an old array so far: what the growth cost, a few per insert (tests).
  std::size_t relinked() const noexcept { return _relinked; }

  iterator begin() {
    iterator it(this, 0, 0, nullptr);
    it.seek(0, 0);
    return it;
  }
  iterator end() { return {}; }
  const_iterator begin() const {
    const_iterator it(this, 0, 0, nullptr);
    it.seek(0, 0);
    return it;
  }
  const_iterator end() const { return {}; }

  template <class Q>
  iterator find(const Q& k) {
    return locate<iterator>(k);
  }
  template <class Q>
  const_iterator find(const Q& k) const {
    return locate<const_iterator>(k);
  }
  template <class Q>
  std::size_t count(const Q& k) const {
    return find(k) == end() ? 0 : 1;
  }
  template <class Q>
  bool contains(const Q& k) const {
    return find(k) != end();
  }

  template <class KK, class... A>
  std::pair<iterator, bool> try_emplace(KK&& k, A&&... a) {
    if (auto it = find(k); it != end()) return {it, false};
    step();
    if (_size + 1 > _cur.n) grow();
    const std::size_t h = Hash{}(k);
    node* p = new node(h, std::forward<KK>(k), std::forward<A>(a)...);
    // Into the bucket lookups search: an old one not moved yet moves with its chain later.
    int t;
    std::size_t i;
    node** head = bucket_of(h, t, i);
    p->next = *head;
    *head = p;
    ++_size;
    return {iterator(this, t, i, p), true};
  }
  template <class KK, class... A>
  std::pair<iterator, bool> emplace(KK&& k, A&&... a) {
    return try_emplace(std::forward<KK>(k), std::forward<A>(a)...);
  }
  template <class KK>
  V& operator[](KK&& k) {
    return try_emplace(std::forward<KK>(k)).first->second;
  }

  // The element after `it` (erasing moves no bucket, so it stays valid).
  iterator erase(const_iterator it) {
    iterator next(this, it._t, it._b, it._p);
    ++next;
    unlink(it._p);
    return next;
  }
  iterator erase(iterator it) { return erase(const_iterator(it)); }
  template <class Q>
  std::size_t erase(const Q& k) {
    const auto it = find(k);
    if (it == end()) return 0;
    unlink(it._p);
    return 1;
  }

  void clear() noexcept {
    for (table* t : {&_cur, &_old}) {
      for (std::size_t i = 0; i < t->n; ++i)
        for (node* p = t->b[i]; p != nullptr;) {
          node* next = p->next;
          delete p;
          p = next;
        }
      free_buckets(*t);
      *t = {};
    }
    _moved = 0;
    _size = 0;
  }

 private:
  // The bucket that holds hash `h`: the old array's where that was not moved yet (an element
  // is in the old array exactly when its old bucket is at or after _moved).
  node** bucket_of(std::size_t h, int& t, std::size_t& b) const {
    if (_old.b != nullptr) {
      b = h & (_old.n - 1);
      if (b >= _moved) {
        t = 1;
        return &_old.b[b];
      }
    }
    t = 0;
    b = h & (_cur.n - 1);
    return &_cur.b[b];
  }

  template <class It, class Q>
  It locate(const Q& k) const {
    if (_size == 0) return It();
    const std::size_t h = Hash{}(k);
    int t;
    std::size_t b;
    for (node* p = *bucket_of(h, t, b); p != nullptr; p = p->next)
      if (p->hash == h && Eq{}(p->kv.first, k)) return It(this, t, b, p);
    return It();
  }

  void unlink(node* victim) {
    int t;
    std::size_t b;
    for (node** pp = bucket_of(victim->hash, t, b); *pp != nullptr; pp = &(*pp)->next)
      if (*pp == victim) {
        *pp = victim->next;
        delete victim;
        --_size;
        return;
      }
  }

  // Zeroed bucket arrays. From 256 KiB straight from mmap: fresh zero pages, touched as the
  // buckets fill (calloc would reuse freed heap memory and clear a megabyte in one insert).
  static constexpr std::size_t kMmapBytes = std::size_t(256) << 10;
  static node** alloc_buckets(std::size_t n) {
    const std::size_t bytes = n * sizeof(node*);
    void* p = bytes >= kMmapBytes ? ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                                  : std::calloc(n, sizeof(node*));
    if (p == nullptr || p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<node**>(p);
  }
  static void free_buckets(const table& t) noexcept {
    if (t.b == nullptr) return;
    if (t.n * sizeof(node*) >= kMmapBytes) {
      ::munmap(t.b, t.n * sizeof(node*));
    } else {
      std::free(t.b);
    }
  }

  void grow() {
    while (_old.b != nullptr) step();  // only when erases and inserts alternate at a boundary
    const std::size_t n = _cur.n == 0 ? 8 : _cur.n * 2;
    node** b = alloc_buckets(n);
    _old = _cur;
    _cur = {b, n};
    _moved = 0;
    if (_old.n == 0) _old = {};
  }

  // Moves up to kStepBuckets non-empty old buckets (looking at no more than 8 times as many).
  void step() {
    if (_old.b == nullptr) return;
    std::size_t moved = 0;
    for (std::size_t seen = 0; moved < kStepBuckets && seen < 8 * kStepBuckets && _moved < _old.n; ++seen) {
      node* p = _old.b[_moved];
      _old.b[_moved++] = nullptr;
      if (p == nullptr) continue;
      ++moved;
      while (p != nullptr) {
        ++_relinked;
        node* next = p->next;
        const std::size_t i = p->hash & (_cur.n - 1);
        p->next = _cur.b[i];
        _cur.b[i] = p;
        p = next;
      }
    }
    if (_moved == _old.n) {
      free_buckets(_old);
      _old = {};
      _moved = 0;
    }
  }

  table _cur;
  table _old;
  std::size_t _moved = 0;  // old buckets below this index are moved (empty)
  std::size_t _size = 0;
  std::size_t _relinked = 0;
};

}  // namespace base
