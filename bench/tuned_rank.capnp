# Cap'n Proto reference row (bench only): the same typed, shared-key design
# as bench/tuned_rank.proto.
@0xc5a3f0e4b2d19a77;

$import "/capnp/c++.capnp".namespace("rankwire::bench::cp");

struct Key {
  name @0 :Text;
  type @1 :UInt8;
}

struct Shape {
  doubleKeys @0 :List(UInt32);
  floatKeys @1 :List(UInt32);
  intKeys @2 :List(UInt32);
  stringKeys @3 :List(UInt32);
}

struct Item {
  itemId @0 :Text;
  score @1 :Float64;
  position @2 :UInt32;
  shape @3 :UInt32;
  doubles @4 :List(Float64);
  floats @5 :List(Float32);
  ints @6 :List(Int64);
  strings @7 :List(UInt32);  # Indexes into Result.stringDict.
  log @8 :Text;
}

struct Result {
  keys @0 :List(Key);
  shapes @1 :List(Shape);
  stringDict @2 :List(Text);
  items @3 :List(Item);
}
