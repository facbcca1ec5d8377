// SPDX-License-Identifier: Apache-2.0
//! Residual expression graphs (`kp_expr_graph`): parameter and data slots, the builders, the text
//! form, and the host interpreter.

use std::ffi::CString;
use std::ptr::{self, NonNull};

use kernelport_sys as sys;

use crate::error::{Error, Result, Status};
use crate::raw;

/// A node of a graph (`kp_expr`): valid when `is_valid`. A builder given a bad operand returns an
/// invalid node and the graph keeps the first error, which `ExprGraph::check` (and
/// `output`, and every handle made from the graph) reports: a whole expression is built, then
/// checked once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Expr {
    id: i32,
}

impl Expr {
    pub fn is_valid(self) -> bool {
        self.id >= 0
    }

    fn raw(self) -> sys::kp_expr {
        sys::kp_expr { id: self.id }
    }

    fn from_raw(e: sys::kp_expr) -> Expr {
        Expr { id: e.id }
    }
}

/// The operations of `ExprGraph::unary` and `binary` (`kp_expr_op`). Comparisons give 1 or 0 (no
/// derivative); `Rsqrt` is safe (0 where x <= 0); `Pow` is exp(y log x).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExprOp {
    Add,
    Sub,
    Mul,
    Div,
    Neg,
    Abs,
    Min,
    Max,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Pow,
    Sin,
    Cos,
    Tan,
    Atan,
    Atan2,
    Tanh,
    Sigmoid,
}

impl ExprOp {
    fn raw(self) -> sys::kp_expr_op {
        match self {
            ExprOp::Add => sys::KP_EXPR_ADD,
            ExprOp::Sub => sys::KP_EXPR_SUB,
            ExprOp::Mul => sys::KP_EXPR_MUL,
            ExprOp::Div => sys::KP_EXPR_DIV,
            ExprOp::Neg => sys::KP_EXPR_NEG,
            ExprOp::Abs => sys::KP_EXPR_ABS,
            ExprOp::Min => sys::KP_EXPR_MIN,
            ExprOp::Max => sys::KP_EXPR_MAX,
            ExprOp::Lt => sys::KP_EXPR_LT,
            ExprOp::Le => sys::KP_EXPR_LE,
            ExprOp::Gt => sys::KP_EXPR_GT,
            ExprOp::Ge => sys::KP_EXPR_GE,
            ExprOp::Eq => sys::KP_EXPR_EQ,
            ExprOp::Ne => sys::KP_EXPR_NE,
            ExprOp::Exp => sys::KP_EXPR_EXP,
            ExprOp::Log => sys::KP_EXPR_LOG,
            ExprOp::Sqrt => sys::KP_EXPR_SQRT,
            ExprOp::Rsqrt => sys::KP_EXPR_RSQRT,
            ExprOp::Pow => sys::KP_EXPR_POW,
            ExprOp::Sin => sys::KP_EXPR_SIN,
            ExprOp::Cos => sys::KP_EXPR_COS,
            ExprOp::Tan => sys::KP_EXPR_TAN,
            ExprOp::Atan => sys::KP_EXPR_ATAN,
            ExprOp::Atan2 => sys::KP_EXPR_ATAN2,
            ExprOp::Tanh => sys::KP_EXPR_TANH,
            ExprOp::Sigmoid => sys::KP_EXPR_SIGMOID,
        }
    }
}

/// What a graph holds (`kp_expr_graph_info`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExprInfo {
    pub n_data: usize,
    pub n_params: usize,
    pub n_outputs: usize,
    /// Nodes the outputs reach.
    pub n_nodes: usize,
    /// A hash of the normalized graph: equal graphs, however built, share it (and their kernels).
    pub key: u64,
}

/// A residual expression graph: parameter slots, data slots (both numbered in the order they are
/// declared) and outputs, the residuals. Host memory; released by Drop.
pub struct ExprGraph {
    raw: NonNull<sys::kp_expr_graph>,
    /// A name with a NUL byte, which the C builders cannot be given: reported by `check`.
    nul_name: Option<String>,
}

// The header: "a graph is used by one thread at a time". It owns only host memory, so it moves
// between threads; not Sync (the builders mutate it, its error message included).
unsafe impl Send for ExprGraph {}

impl ExprGraph {
    /// An empty graph.
    pub fn new() -> Result<ExprGraph> {
        let mut g = ptr::null_mut();
        // SAFETY: g receives a caller-owned graph.
        let st = unsafe { sys::kp_expr_graph_create(&mut g) };
        match NonNull::new(g) {
            Some(raw) if st == sys::KP_OK => Ok(ExprGraph { raw, nul_name: None }),
            _ => Err(Error::new(Status::from_raw(st), "kp_expr_graph_create failed")),
        }
    }

    /// A graph of the parameters `params` and data columns `data` (names separated by commas or
    /// spaces, in slot order: "b1 b2"), with the residuals of `text` (the text form of
    /// docs/solve.md: "b1*(1-exp(-b2*x)) - y"). A parse error's message gives the line and
    /// column, what was expected and what was found, then the line and a caret.
    pub fn from_text(params: &str, data: &str, text: &str) -> Result<ExprGraph> {
        let mut g = ExprGraph::new()?;
        g.declare_params(params)?;
        g.declare_data(data)?;
        g.parse(text)?;
        Ok(g)
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::kp_expr_graph {
        self.raw.as_ptr()
    }

    /// Ok, or the graph's message for `status`.
    fn result(&self, status: sys::kp_status) -> Result<()> {
        if status == sys::KP_OK {
            return Ok(());
        }
        // SAFETY: a live graph; its message is copied at once.
        let message = unsafe { raw::string(sys::kp_expr_graph_error(self.as_ptr())) };
        Err(Error::new(Status::from_raw(status), message))
    }

    fn c_name(&mut self, name: &str) -> CString {
        CString::new(name).unwrap_or_else(|_| {
            self.nul_name.get_or_insert_with(|| name.to_string());
            CString::default() // an empty name, which the library refuses
        })
    }

    fn declare(&mut self, is_param: bool, names: &str) -> Result<()> {
        let c = raw::c_string(names, if is_param { "params" } else { "data" })?;
        // SAFETY: a live graph; c outlives the call.
        self.result(unsafe { sys::kp_expr_declare(self.as_ptr(), is_param as i32, c.as_ptr()) })
    }

    /// Declares parameters, the next slots ("b1, b2, b3").
    pub fn declare_params(&mut self, names: &str) -> Result<()> {
        self.declare(true, names)
    }

    /// Declares data columns, the next slots ("x y").
    pub fn declare_data(&mut self, names: &str) -> Result<()> {
        self.declare(false, names)
    }

    /// Parses statements of the text form: each expression becomes the next output, `name = ...`
    /// a local. Names must be declared first. On error the outputs stay as they were.
    pub fn parse(&mut self, text: &str) -> Result<()> {
        let c = raw::c_string(text, "text")?;
        // SAFETY: a live graph; c outlives the call.
        self.result(unsafe { sys::kp_expr_parse(self.as_ptr(), c.as_ptr()) })
    }

    /// A constant (finite).
    pub fn constant(&mut self, value: f64) -> Expr {
        // SAFETY: a live graph.
        Expr::from_raw(unsafe { sys::kp_expr_const(self.as_ptr(), value) })
    }

    /// The parameter `name`, declared as the next slot when new.
    pub fn param(&mut self, name: &str) -> Expr {
        let c = self.c_name(name);
        // SAFETY: a live graph; c outlives the call.
        Expr::from_raw(unsafe { sys::kp_expr_param(self.as_ptr(), c.as_ptr()) })
    }

    /// The data column `name`, declared as the next slot when new.
    pub fn data(&mut self, name: &str) -> Expr {
        let c = self.c_name(name);
        // SAFETY: a live graph; c outlives the call.
        Expr::from_raw(unsafe { sys::kp_expr_data(self.as_ptr(), c.as_ptr()) })
    }

    /// A one-operand operation (`Neg`, `Exp`, ...; a two-operand one is an error).
    pub fn unary(&mut self, op: ExprOp, a: Expr) -> Expr {
        // SAFETY: a live graph; the library checks the node.
        Expr::from_raw(unsafe { sys::kp_expr_unary(self.as_ptr(), op.raw(), a.raw()) })
    }

    /// A two-operand operation (`Add`, `Pow`, `Atan2` (y, x), comparisons, ...).
    pub fn binary(&mut self, op: ExprOp, a: Expr, b: Expr) -> Expr {
        // SAFETY: a live graph; the library checks the nodes.
        Expr::from_raw(unsafe { sys::kp_expr_binary(self.as_ptr(), op.raw(), a.raw(), b.raw()) })
    }

    /// `a` where `cond` != 0, else `b`; the derivative is the chosen branch's.
    pub fn select(&mut self, cond: Expr, a: Expr, b: Expr) -> Expr {
        // SAFETY: a live graph; the library checks the nodes.
        Expr::from_raw(unsafe { sys::kp_expr_select(self.as_ptr(), cond.raw(), a.raw(), b.raw()) })
    }

    /// `a` to the integer power `n` (any sign of a).
    pub fn powi(&mut self, a: Expr, n: i32) -> Expr {
        // SAFETY: a live graph; the library checks the node.
        Expr::from_raw(unsafe { sys::kp_expr_powi(self.as_ptr(), a.raw(), n) })
    }

    /// The dot product of two vectors of nodes (an invalid node when their lengths differ or are
    /// 0).
    pub fn dot(&mut self, a: &[Expr], b: &[Expr]) -> Expr {
        if a.len() != b.len() || a.is_empty() {
            return Expr { id: -1 };
        }
        let (a, b): (Vec<_>, Vec<_>) =
            (a.iter().map(|e| e.raw()).collect(), b.iter().map(|e| e.raw()).collect());
        // SAFETY: a and b hold a.len() nodes each.
        Expr::from_raw(unsafe { sys::kp_expr_dot(self.as_ptr(), a.len(), a.as_ptr(), b.as_ptr()) })
    }

    /// The Euclidean norm of a vector of nodes.
    pub fn norm(&mut self, a: &[Expr]) -> Expr {
        let a: Vec<_> = a.iter().map(|e| e.raw()).collect();
        // SAFETY: a holds a.len() nodes (0 is refused by the library).
        Expr::from_raw(unsafe { sys::kp_expr_norm(self.as_ptr(), a.len(), a.as_ptr()) })
    }

    /// The cross product of two 3-vectors of nodes.
    pub fn cross(&mut self, a: [Expr; 3], b: [Expr; 3]) -> [Expr; 3] {
        let (a, b) = (a.map(Expr::raw), b.map(Expr::raw));
        let mut out = [sys::kp_expr { id: -1 }; 3];
        // SAFETY: a, b and out hold 3 nodes each.
        unsafe { sys::kp_expr_cross(self.as_ptr(), a.as_ptr(), b.as_ptr(), out.as_mut_ptr()) };
        out.map(Expr::from_raw)
    }

    /// a / |a| with the safe rsqrt (the zero vector maps to zero).
    pub fn normalize(&mut self, a: &[Expr]) -> Vec<Expr> {
        let a: Vec<_> = a.iter().map(|e| e.raw()).collect();
        let mut out = vec![sys::kp_expr { id: -1 }; a.len()];
        // SAFETY: a and out hold a.len() nodes each (0 is refused by the library).
        unsafe { sys::kp_expr_normalize(self.as_ptr(), a.len(), a.as_ptr(), out.as_mut_ptr()) };
        out.into_iter().map(Expr::from_raw).collect()
    }

    /// Appends `e` as the next residual output; reports the graph's first error, if any.
    pub fn output(&mut self, e: Expr) -> Result<()> {
        self.check()?;
        // SAFETY: a live graph; the library checks the node.
        self.result(unsafe { sys::kp_expr_graph_output(self.as_ptr(), e.raw()) })
    }

    /// Ok, or the first error a builder met (its message names the builder and operand).
    pub fn check(&self) -> Result<()> {
        if let Some(name) = &self.nul_name {
            return Err(Error::invalid(format!("name {:?} contains a NUL byte", name)));
        }
        // SAFETY: a live graph.
        self.result(unsafe { sys::kp_expr_graph_status(self.as_ptr()) })
    }

    pub fn info(&self) -> Result<ExprInfo> {
        let mut i = raw::expr_graph_info();
        // SAFETY: i has struct_size set.
        self.result(unsafe { sys::kp_expr_graph_get_info(self.as_ptr(), &mut i) })?;
        Ok(ExprInfo {
            n_data: i.n_data as usize,
            n_params: i.n_params as usize,
            n_outputs: i.n_outputs as usize,
            n_nodes: i.n_nodes as usize,
            key: i.key,
        })
    }

    /// The parameter names, in slot order.
    pub fn param_names(&self) -> Vec<String> {
        self.names(sys::kp_expr_param_name)
    }

    /// The data column names, in slot order.
    pub fn data_names(&self) -> Vec<String> {
        self.names(sys::kp_expr_data_name)
    }

    fn names(
        &self,
        get: unsafe extern "C" fn(*const sys::kp_expr_graph, u32) -> *const std::os::raw::c_char,
    ) -> Vec<String> {
        // SAFETY: NULL past the end; the names are graph-owned and copied at once.
        (0u32..)
            .map(|i| unsafe { get(self.as_ptr(), i) })
            .take_while(|p| !p.is_null())
            .map(|p| unsafe { raw::string(p) })
            .collect()
    }

    /// The host reference on one instance, in double with forward-mode derivatives: `data` holds
    /// its n_data values, `params` its n_params values (slot order). Returns the residuals
    /// [n_outputs] and the Jacobian [n_outputs, n_params] (row o: d r_o / d slot s at s).
    pub fn eval(&self, data: &[f64], params: &[f64]) -> Result<(Vec<f64>, Vec<f64>)> {
        let info = self.info()?;
        if info.n_outputs == 0 {
            return Err(Error::invalid("eval: the graph has no output"));
        }
        if data.len() != info.n_data || params.len() != info.n_params {
            return Err(Error::invalid(format!(
                "eval: {} data and {} parameter values, the graph has {} and {} slots",
                data.len(),
                params.len(),
                info.n_data,
                info.n_params
            )));
        }
        let mut r = vec![0.0; info.n_outputs];
        let mut jac = vec![0.0; info.n_outputs * info.n_params];
        let none = 0.0;
        let d = if data.is_empty() { &none } else { &data[0] };
        let p = if params.is_empty() { &none } else { &params[0] };
        // SAFETY: the slices hold what the graph reads and writes (checked above).
        let st = unsafe {
            sys::kp_expr_graph_eval(self.as_ptr(), d, p, r.as_mut_ptr(), jac.as_mut_ptr())
        };
        if st != sys::KP_OK {
            return Err(Error::new(
                Status::from_raw(st),
                "kp_expr_graph_eval failed (out of memory)",
            ));
        }
        Ok((r, jac))
    }

    /// The graph's slot counts, after its first error (every handle needs a valid graph).
    pub(crate) fn checked_info(&self) -> Result<ExprInfo> {
        self.check()?;
        self.info()
    }
}

impl Drop for ExprGraph {
    fn drop(&mut self) {
        // SAFETY: owned; handles made from it keep their own copy.
        unsafe { sys::kp_expr_graph_destroy(self.as_ptr()) }
    }
}

impl std::fmt::Debug for ExprGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExprGraph")
            .field("params", &self.param_names())
            .field("data", &self.data_names())
            .field("info", &self.info().ok())
            .finish()
    }
}
