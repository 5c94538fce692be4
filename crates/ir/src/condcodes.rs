//! Condition codes of `icmp` and `fcmp`, address spaces, geometry dimensions and atomic
//! operations: the small closed sets that instructions carry as immediates.

use crate::named_enum::named_enum;

named_enum! {
    /// The condition of an integer comparison.
    pub enum IntCC {
        /// Equal.
        Equal = "eq",
        /// Not equal.
        NotEqual = "ne",
        /// Signed less than.
        SignedLessThan = "slt",
        /// Signed less than or equal.
        SignedLessThanOrEqual = "sle",
        /// Signed greater than.
        SignedGreaterThan = "sgt",
        /// Signed greater than or equal.
        SignedGreaterThanOrEqual = "sge",
        /// Unsigned less than.
        UnsignedLessThan = "ult",
        /// Unsigned less than or equal.
        UnsignedLessThanOrEqual = "ule",
        /// Unsigned greater than.
        UnsignedGreaterThan = "ugt",
        /// Unsigned greater than or equal.
        UnsignedGreaterThanOrEqual = "uge",
    }
}

impl IntCC {
    /// The condition that holds exactly when `self` does not.
    pub fn inverse(self) -> IntCC {
        use IntCC::*;
        match self {
            Equal => NotEqual,
            NotEqual => Equal,
            SignedLessThan => SignedGreaterThanOrEqual,
            SignedLessThanOrEqual => SignedGreaterThan,
            SignedGreaterThan => SignedLessThanOrEqual,
            SignedGreaterThanOrEqual => SignedLessThan,
            UnsignedLessThan => UnsignedGreaterThanOrEqual,
            UnsignedLessThanOrEqual => UnsignedGreaterThan,
            UnsignedGreaterThan => UnsignedLessThanOrEqual,
            UnsignedGreaterThanOrEqual => UnsignedLessThan,
        }
    }
}

named_enum! {
    /// The condition of a float comparison. Ordered conditions are false when either
    /// operand is NaN; unordered ones (`u` prefix) are true then.
    pub enum FloatCC {
        /// Neither operand is NaN.
        Ordered = "ord",
        /// Either operand is NaN.
        Unordered = "uno",
        /// Ordered and equal.
        Equal = "eq",
        /// Ordered and not equal.
        OrderedNotEqual = "one",
        /// Ordered and less than.
        LessThan = "lt",
        /// Ordered and less than or equal.
        LessThanOrEqual = "le",
        /// Ordered and greater than.
        GreaterThan = "gt",
        /// Ordered and greater than or equal.
        GreaterThanOrEqual = "ge",
        /// Unordered or equal.
        UnorderedOrEqual = "ueq",
        /// Unordered or not equal.
        NotEqual = "une",
        /// Unordered or less than.
        UnorderedOrLessThan = "ult",
        /// Unordered or less than or equal.
        UnorderedOrLessThanOrEqual = "ule",
        /// Unordered or greater than.
        UnorderedOrGreaterThan = "ugt",
        /// Unordered or greater than or equal.
        UnorderedOrGreaterThanOrEqual = "uge",
    }
}

impl FloatCC {
    /// The condition that holds exactly when `self` does not (NaN included).
    pub fn inverse(self) -> FloatCC {
        use FloatCC::*;
        match self {
            Ordered => Unordered,
            Unordered => Ordered,
            Equal => NotEqual,
            NotEqual => Equal,
            OrderedNotEqual => UnorderedOrEqual,
            UnorderedOrEqual => OrderedNotEqual,
            LessThan => UnorderedOrGreaterThanOrEqual,
            UnorderedOrGreaterThanOrEqual => LessThan,
            LessThanOrEqual => UnorderedOrGreaterThan,
            UnorderedOrGreaterThan => LessThanOrEqual,
            GreaterThan => UnorderedOrLessThanOrEqual,
            UnorderedOrLessThanOrEqual => GreaterThan,
            GreaterThanOrEqual => UnorderedOrLessThan,
            UnorderedOrLessThan => GreaterThanOrEqual,
        }
    }
}

named_enum! {
    /// A memory address space.
    pub enum AddrSpace {
        /// Device memory shared by the whole grid; addresses are `i64`.
        Global = "global",
        /// Memory of one thread block; addresses are `i32` byte offsets.
        Shared = "shared",
        /// Memory private to one thread; addresses are `i32` byte offsets.
        Local = "local",
    }
}

impl AddrSpace {
    /// The type of addresses in this space.
    pub fn addr_type(self) -> crate::Type {
        match self {
            AddrSpace::Global => crate::Type::I64,
            AddrSpace::Shared | AddrSpace::Local => crate::Type::I32,
        }
    }
}

named_enum! {
    /// A dimension of the thread grid.
    pub enum Dim {
        /// The x dimension (fastest varying).
        X = "x",
        /// The y dimension.
        Y = "y",
        /// The z dimension.
        Z = "z",
    }
}

impl Dim {
    /// 0 for x, 1 for y, 2 for z.
    pub fn index(self) -> usize {
        self as usize
    }
}

named_enum! {
    /// The operation of an `atomic_rmw`. Each returns the old value and stores
    /// `old OP operand`.
    pub enum AtomicRmwOp {
        /// Wrapping addition.
        Add = "add",
        /// Signed minimum.
        Smin = "smin",
        /// Signed maximum.
        Smax = "smax",
        /// Unsigned minimum.
        Umin = "umin",
        /// Unsigned maximum.
        Umax = "umax",
        /// Bitwise and.
        And = "and",
        /// Bitwise or.
        Or = "or",
        /// Bitwise exclusive or.
        Xor = "xor",
        /// Exchange: stores the operand.
        Xchg = "xchg",
    }
}
