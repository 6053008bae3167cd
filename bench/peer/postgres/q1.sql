-- Q1: a user
\set u random(1, :nusers)
SELECT user_no, user_id, username FROM users WHERE user_no = :u;
