// A thin RAII wrapper over SQLite's C API: a connection, prepared statements with bound
// parameters, and a transaction that rolls back unless committed. Every failure throws DbError
// with SQLite's message.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace kdsim::db {

// A database that cannot be opened, is refused, or a statement that failed.
class DbError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Statement;

class Connection {
public:
    enum class Open { READ_ONLY, READ_WRITE, CREATE };
    // Opens the database at `path` (CREATE: read-write, creating the file if absent).
    Connection(const std::string& path, Open how);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // Runs one or more statements that return no rows.
    void exec(std::string_view sql);
    // The first column of the first row of a query returning one integer.
    std::int64_t integer(std::string_view sql);
    std::int64_t last_insert_rowid() const;
    sqlite3* handle() const { return db_; }

private:
    sqlite3* db_ = nullptr;
};

class Statement {
public:
    Statement(Connection& c, std::string_view sql);
    ~Statement();
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    // Parameters are numbered from 1; param() gives a named one's number (0: not in the statement).
    int param(const char* name) const;
    void bind(int i, std::string_view text);
    void bind(int i, std::int64_t v);
    void bind(int i, double v);
    void bind_null(int i);
    // Advances: true while a row is available; false when done.
    bool step();
    // Executes a statement that returns no row, then resets it for the next bindings.
    void run();
    void reset();

    std::int64_t integer(int col) const;
    double real(int col) const;
    std::string text(int col) const; // "" for NULL

private:
    Connection& c_;
    sqlite3_stmt* st_ = nullptr;
};

// BEGIN IMMEDIATE on construction; ROLLBACK on destruction unless commit() was called.
class Transaction {
public:
    explicit Transaction(Connection& c);
    ~Transaction();
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit();

private:
    Connection& c_;
    bool done_ = false;
};

} // namespace kdsim::db
