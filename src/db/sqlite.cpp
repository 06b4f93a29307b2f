#include "db/sqlite.h"

#include <sqlite3.h>

namespace kdsim::db {

namespace {
[[noreturn]] void fail(sqlite3* db, std::string_view what) {
    throw DbError(std::string(what) + ": " + (db ? sqlite3_errmsg(db) : "out of memory"));
}
} // namespace

Connection::Connection(const std::string& path, Open how) {
    const int flags = how == Open::READ_ONLY    ? SQLITE_OPEN_READONLY
                      : how == Open::READ_WRITE ? SQLITE_OPEN_READWRITE
                                                : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
        std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
        sqlite3_close(db_);
        db_ = nullptr;
        throw DbError("cannot open: " + msg);
    }
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, 10'000); // another kdsim writing the same file: wait for it
}

Connection::~Connection() { sqlite3_close(db_); }

void Connection::exec(std::string_view sql) {
    char* err = nullptr;
    const std::string s(sql);
    if (sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
        std::string msg = err ? err : sqlite3_errmsg(db_);
        sqlite3_free(err);
        throw DbError(msg);
    }
}

std::int64_t Connection::integer(std::string_view sql) {
    Statement st(*this, sql);
    if (!st.step()) throw DbError("no row from: " + std::string(sql));
    return st.integer(0);
}

std::int64_t Connection::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

Statement::Statement(Connection& c, std::string_view sql) : c_(c) {
    if (sqlite3_prepare_v2(c.handle(), sql.data(), static_cast<int>(sql.size()), &st_, nullptr) != SQLITE_OK)
        fail(c.handle(), "prepare");
}

Statement::~Statement() { sqlite3_finalize(st_); }

int Statement::param(const char* name) const { return sqlite3_bind_parameter_index(st_, name); }

void Statement::bind(int i, std::string_view text) {
    if (sqlite3_bind_text(st_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT) != SQLITE_OK)
        fail(c_.handle(), "bind");
}
void Statement::bind(int i, std::int64_t v) {
    if (sqlite3_bind_int64(st_, i, v) != SQLITE_OK) fail(c_.handle(), "bind");
}
void Statement::bind(int i, double v) {
    if (sqlite3_bind_double(st_, i, v) != SQLITE_OK) fail(c_.handle(), "bind");
}
void Statement::bind_null(int i) {
    if (sqlite3_bind_null(st_, i) != SQLITE_OK) fail(c_.handle(), "bind");
}

bool Statement::step() {
    const int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(c_.handle(), "step");
}

void Statement::run() {
    while (step()) {
    }
    reset();
}

void Statement::reset() {
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
}

std::int64_t Statement::integer(int col) const { return sqlite3_column_int64(st_, col); }
double Statement::real(int col) const { return sqlite3_column_double(st_, col); }
std::string Statement::text(int col) const {
    const unsigned char* p = sqlite3_column_text(st_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(st_, col)))
             : std::string();
}

Transaction::Transaction(Connection& c) : c_(c) { c_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
    if (!done_) {
        try {
            c_.exec("ROLLBACK");
        } catch (const DbError&) {
            // SQLite already rolled back (an I/O error or a full disk ends the transaction)
        }
    }
}

void Transaction::commit() {
    c_.exec("COMMIT");
    done_ = true;
}

} // namespace kdsim::db
